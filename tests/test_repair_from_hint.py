"""No model call for a repair that is already known (``repair_from_hint``): when a query fails
on a name and its execution hint holds the version that runs, each pipeline's repair step runs
that version again under the run's limits and takes it, without asking the model; off (the
paper-faithful setting, and what runs recorded before the switch replay with) the model is
asked as before. Against the scripted server: a repair that asked the model would find no
scripted reply, or show up in its requests."""

from __future__ import annotations

import json

import pytest

from agents.core.engine import resume_run, run_to_end
from agents.outputs import load
from agents.pipelines import get_pipeline
from agents.rules import registry
from agents.rules.name_rewrite import Rewrite
from agents.rules.registry import rule

import csma_script
import deasql_script
import macsql_script
import r3_script
import selection_script
from prompt_markers import DEA_CORRECT, DEA_GENERATE, DEA_REPAIR, R3_EXEC_ERROR

USERS = ("macsql", "deasql", "r3", "csma", "selection")
TAKEN = "taken from the hint, no model call"


def text_of(event) -> str:
    """The step's output as the CLI's trace prints it."""
    return "\n".join(load(event.kind, event.parsed).text_lines())


# -- the rule and its switch ------------------------------------------------------------------

def test_one_rule_with_one_switch_on_by_default_and_off_for_recorded_runs():
    r = rule("repair_from_hint")
    assert (r.kind, r.hook, r.switch, r.origin) == (registry.CHANGES_RESULT,
                                                    registry.REPAIR_ENDING,
                                                    "repair_from_hint", registry.STUDIO)
    assert not r.acts  # the repair steps call it themselves
    assert set(r.recorded_off) == set(USERS)
    for name in USERS:
        pipeline = get_pipeline(name)
        spec = next(p for p in pipeline.params if p.name == "repair_from_hint")
        assert spec.default is True and spec.origin == "studio" and spec.help
        assert "repair_from_hint" in pipeline.rules
        assert pipeline.resolve_params({})["repair_from_hint"] is True
        assert pipeline.resolve_recorded({})["repair_from_hint"] is False  # as before it
    assert "repair_from_hint" not in get_pipeline("baseline").rules  # no repair step


def test_an_evaluation_recorded_before_the_switch_resumes_with_it_off_only(tmp_path):
    from agents.cli.main import UsageError
    from agents.evaluation.manifest import check_manifest, recorded_params

    base = {"dataset": "d", "sample_mode": "stratified", "seed": 8, "keep_distinct": False,
            "model": "m", "error_hints": True, "examples": None}
    for name in USERS:
        pipeline = get_pipeline(name)
        now = recorded_params({}, [pipeline])
        before = {name: {k: v for k, v in now[name].items() if k != "repair_from_hint"}}
        (tmp_path / "manifest.json").write_text(json.dumps({**base, "params": before}))
        with pytest.raises(UsageError, match="'repair_from_hint': False.* there, "
                                             ".*'repair_from_hint': True"):
            check_manifest(tmp_path, {**base, "params": now})
        check_manifest(tmp_path, {**base, "params": recorded_params(
            {name: {"repair_from_hint": False}}, [pipeline])})


# -- MAC-SQL's Refiner ------------------------------------------------------------------------

WRONG_ALIAS = ("SELECT T1.name FROM concert AS T1 JOIN singer AS T2 ON T1.singer_id = T2.singer_id "
               "WHERE T1.year = 2015")  # name is a column of singer, T2


def refiner_events(result):
    return [e for e in result.events if e.agent == "Refiner"]


def test_the_refiner_takes_the_hints_version_without_a_model_call(small_db, llm, scripted_llm):
    """``T1.name`` where T1 is concert: the hint holds the query with ``T2.name`` (singer), which
    runs. No Refiner reply is scripted: a model call would fail the run."""
    scripted_llm.when(macsql_script.DECOMPOSER, macsql_script.decomposition(("q", WRONG_ALIAS)))
    result = macsql_script.run(small_db, llm, "Who sang in 2015?")

    assert result.status == "done", result.error
    assert macsql_script.requests_for(scripted_llm, macsql_script.REFINER) == []
    repair, check = refiner_events(result)
    assert repair.calls == [] and repair.inputs["repair_from_hint"] is True
    assert repair.parsed["status"] == "repaired" and repair.parsed["from_hint"] is True
    assert repair.parsed["sql_before"] == WRONG_ALIAS and "T2.name" in repair.parsed["sql_after"]
    assert "T1.name written T2.name" in repair.parsed["rewrite"]
    assert repair.parsed["sql_after"] in repair.parsed["hint"]  # the version the hint held
    assert repair.execution["ok"] is False  # the pass executed the failing SQL
    assert repair.parsed["attempt"] == 1 and repair.next_step == "refiner"
    assert f"{TAKEN}: T1.name written T2.name" in text_of(repair)
    # the next pass runs it again under the run's limits, as it runs any repair
    assert check.parsed == {"status": "ok", "rows": 2} and check.calls == []
    assert result.final_sql == repair.parsed["sql_after"]
    assert sorted(r[0] for r in result.result["rows"]) == ["Ana", "Bo"]


def test_with_the_switch_off_the_refiner_asks_the_model_as_before(small_db, llm, scripted_llm):
    right = WRONG_ALIAS.replace("T1.name", "T2.name")
    scripted_llm.when(macsql_script.DECOMPOSER, macsql_script.decomposition(("q", WRONG_ALIAS)))
    scripted_llm.when(macsql_script.REFINER, f"```sql\n{right}\n```")
    result = macsql_script.run(small_db, llm, "Who sang in 2015?", repair_from_hint=False)

    assert result.status == "done", result.error
    prompts = macsql_script.requests_for(scripted_llm, macsql_script.REFINER)
    assert len(prompts) == 1
    assert "A version that runs, with T1.name written T2.name" in json.dumps(prompts[0])
    repair = refiner_events(result)[0]
    assert len(repair.calls) == 1 and repair.inputs["repair_from_hint"] is False
    assert "from_hint" not in repair.parsed and "rewrite" not in repair.parsed  # as before
    assert TAKEN not in text_of(repair) and "asked the model" not in text_of(repair)
    assert result.final_sql == right


def test_a_recorded_run_resumed_without_the_switch_asks_the_model(small_db, llm, scripted_llm):
    """A run recorded before the switch has no ``repair_from_hint`` in its parameters: resumed
    at the Refiner, it replays with the option off, as it ran."""
    right = WRONG_ALIAS.replace("T1.name", "T2.name")
    scripted_llm.when(macsql_script.DECOMPOSER, macsql_script.decomposition(("q", WRONG_ALIAS)))
    scripted_llm.when(macsql_script.REFINER, f"```sql\n{right}\n```")
    first = macsql_script.run(small_db, llm, "Who sang in 2015?", repair_from_hint=False)
    first.params = {k: v for k, v in first.params.items() if k != "repair_from_hint"}
    index = refiner_events(first)[0].index
    scripted_llm.requests.clear()
    again = run_to_end(resume_run(macsql_script.PIPELINE, first, index, small_db, llm))

    assert again.status == "done", again.error
    assert again.params["repair_from_hint"] is False
    assert len(macsql_script.requests_for(scripted_llm, macsql_script.REFINER)) == 1
    assert "from_hint" not in refiner_events(again)[0].parsed
    assert again.final_sql == first.final_sql == right


def test_a_hints_version_failing_under_the_runs_limits_goes_to_the_model(small_db, llm,
                                                                         scripted_llm,
                                                                         monkeypatch):
    """It cannot happen (the version ran when the hint was built), but were it to fail when run
    again under the run's limits, the model is asked, and the step says why."""
    from agents.rules import runnable_ending

    right = WRONG_ALIAS.replace("T1.name", "T2.name")
    monkeypatch.setattr(runnable_ending, "hinted_rewrite", lambda *a, **k: Rewrite(
        sql="SELECT nothing_here FROM singer", changes=("a change",)))
    scripted_llm.when(macsql_script.DECOMPOSER, macsql_script.decomposition(("q", WRONG_ALIAS)))
    scripted_llm.when(macsql_script.REFINER, f"```sql\n{right}\n```")
    result = macsql_script.run(small_db, llm, "Who sang in 2015?")

    assert len(macsql_script.requests_for(scripted_llm, macsql_script.REFINER)) == 1
    repair = refiner_events(result)[0]
    assert repair.parsed["from_hint"] is False and len(repair.calls) == 1
    assert "fails under the run's limits (no such column: nothing_here)" in repair.notes[0]
    assert "asked the model" in text_of(repair)
    assert repair.execution["sql"] == WRONG_ALIAS  # the trial is not the step's execution
    assert result.final_sql == right


def test_hints_off_leave_nothing_to_take(small_db, llm, scripted_llm):
    """An evaluation's ``--no-error-hints``: the error comes without a hint, so without its
    version, and the model is asked."""
    from agents.core.engine import ExecLimits, start_run

    right = WRONG_ALIAS.replace("T1.name", "T2.name")
    scripted_llm.when(macsql_script.DECOMPOSER, macsql_script.decomposition(("q", WRONG_ALIAS)))
    scripted_llm.when(macsql_script.REFINER, f"```sql\n{right}\n```")
    result = run_to_end(start_run(macsql_script.PIPELINE, "Who sang in 2015?", small_db, llm,
                                  params={"value_grounding": "off"},
                                  limits=ExecLimits(hints=False)))
    assert len(macsql_script.requests_for(scripted_llm, macsql_script.REFINER)) == 1
    assert refiner_events(result)[0].parsed["from_hint"] is False


# -- DEA-SQL's execution check ----------------------------------------------------------------

DEA_WRONG_ALIAS = ("SELECT T1.name FROM singer_in_concert AS T1 JOIN singer AS T2 "
                   "ON T1.singer_id = T2.singer_id WHERE T1.concert_id = 2")


@pytest.mark.parametrize("on", [True, False])
def test_deasqls_execution_check_repairs_from_the_hint_unless_off(db, llm, scripted_llm, on):
    deasql_script.script(scripted_llm, **{DEA_GENERATE: json.dumps({"sql": DEA_WRONG_ALIAS}),
                                          DEA_CORRECT: json.dumps({"sql": DEA_WRONG_ALIAS})})
    result = deasql_script.run(db, llm, "Who sang in the Autumn concert?", variant=None,
                               repair_from_hint=on)
    assert result.status == "done", result.error
    step = deasql_script.event(result, "execution_check")
    repair = step.parsed["repairs"][0]
    assert step.parsed["ok"] is True and "written_sql" not in step.parsed  # not the ending
    assert step.inputs["repair_from_hint"] is on
    if on:
        assert deasql_script.prompts_with(scripted_llm, DEA_REPAIR) == [] and step.calls == []
        assert repair["from_hint"] is True and "T1.name written T2.name" in repair["rewrite"]
        assert repair["sql_before"] == DEA_WRONG_ALIAS and "T2.name" in repair["sql_after"]
        assert step.execution["ok"] and step.execution["sql"] == repair["sql_after"]
        assert TAKEN in text_of(step)
        assert [r[0] for r in result.result["rows"]] == ["Ann"]
    else:
        assert len(deasql_script.prompts_with(scripted_llm, DEA_REPAIR)) == 1
        assert "from_hint" not in repair and len(step.calls) == 1
        assert repair["sql_after"] == deasql_script.GOOD_SQL  # the model's repair


# -- R³'s correction --------------------------------------------------------------------------

R3_ALIAS_ERROR = ("SELECT T2.name FROM singer AS T1 JOIN singer_in_concert AS T2 "
                  "ON T1.singer_id = T2.singer_id")


def test_r3s_correction_is_the_hints_version_and_the_writer_is_not_asked(db, llm,
                                                                          scripted_llm):
    scripted_llm.push(r3_script.writer(R3_ALIAS_ERROR, "First try."), r3_script.invitation(1),
                      r3_script.approve())
    result = r3_script.run(db, llm, n_reviewers=1, drop_unread_joins=False)

    assert result.status == "done", result.error
    assert r3_script.requests_with(scripted_llm, R3_EXEC_ERROR) == []
    assert len(scripted_llm.requests) == 3 and scripted_llm.remaining == 0
    fix = next(e for e in result.events if e.step == "fix")
    assert fix.calls == [] and fix.inputs["repair_from_hint"] is True
    assert fix.parsed["from_hint"] is True and "T2.name written T1.name" in fix.parsed["rewrite"]
    assert fix.data["dialogue"] == [{"role": "assistant",
                                     "content": r3_script.writer(R3_ALIAS_ERROR, "First try.")}]
    assert TAKEN in text_of(fix)
    execution = [e for e in result.events if e.step == "execute"][1]
    assert execution.parsed["ok"] and "written_sql" not in execution.parsed
    assert result.final_sql == fix.parsed["sql_after"] and "T1.name" in result.final_sql


def test_with_the_switch_off_r3s_writer_corrects_as_before(db, llm, scripted_llm):
    scripted_llm.push(r3_script.writer(R3_ALIAS_ERROR), r3_script.writer(r3_script.SQL_A),
                      r3_script.invitation(1), r3_script.approve())
    result = r3_script.run(db, llm, n_reviewers=1, repair_from_hint=False)
    assert result.status == "done", result.error
    assert len(r3_script.requests_with(scripted_llm, R3_EXEC_ERROR)) == 1
    fix = next(e for e in result.events if e.step == "fix")
    assert len(fix.calls) == 1 and "from_hint" not in fix.parsed
    assert result.final_sql == r3_script.SQL_A


# -- candidate selection's repair -------------------------------------------------------------

UNBOUND = "SELECT T2.name FROM singer AS T1 WHERE T1.country = 'France'"  # T2 names nothing


@pytest.mark.parametrize("on", [True, False])
def test_a_failing_candidate_is_repaired_from_the_hint_unless_off(db, llm, scripted_llm, on):
    selection_script.script(
        scripted_llm, writer=selection_script.sql_block(UNBOUND),
        decomposer=selection_script.decomposition(selection_script.FRANCE),
        repair=selection_script.sql_block(selection_script.FRANCE_ALIASED))
    result = selection_script.run(db, llm, generators="writer,decomposer", samples=0,
                                  repair_from_hint=on)

    assert result.status == "done", result.error
    assert [e.step for e in result.events] == [
        "ground", "candidate:writer", "repair:writer", "candidate:decomposer", "vote"]
    repair = result.events[2]
    asked = selection_script.requests_for(scripted_llm, R3_EXEC_ERROR)
    assert repair.execution["ok"] and result.events[-1].parsed["outcome"] == "decisive"
    if on:
        assert asked == [] and repair.calls == []
        assert repair.parsed["from_hint"] is True
        assert repair.parsed["sql_after"] == "SELECT T1.name FROM singer AS T1 WHERE " \
                                             "T1.country = 'France'"
        assert TAKEN in text_of(repair)
    else:
        assert len(asked) == 1 and len(repair.calls) == 1 and "from_hint" not in repair.parsed
        assert repair.parsed["sql_after"] == selection_script.FRANCE_ALIASED


# -- CSMA's global writer ---------------------------------------------------------------------

RESPELT = "SELECT HullName FROM vessels WHERE tonnage > 1000"  # the column is hull_name


@pytest.mark.parametrize("on", [True, False])
def test_the_global_writers_repair_is_the_hints_version_unless_off(fleet, llm, scripted_llm,
                                                                   on):
    """With ``name_rewrite`` off the writer's SQL is kept as written, and its repair is told the
    hint, which holds the version that runs within the global schema."""
    fixed = "SELECT hull_name FROM vessels WHERE tonnage > 1000"
    scripted_llm.push(csma_script.tables_answer("vessels"),
                      csma_script.sql_block(csma_script.FAILING_SQL),
                      csma_script.sql_block(RESPELT), csma_script.sql_block(fixed))
    run = csma_script.run_agreement(fleet, llm, max_rounds=1, name_rewrite=False,
                                    global_writer=True, repair_from_hint=on)
    assert run.status == "done", run.error
    step = next(e for e in run.events if e.step == "global_writer")
    assert step.parsed["taken"] is True and step.parsed["first_sql"] == RESPELT
    assert run.final_sql == fixed
    if on:
        assert len(step.calls) == 1 and scripted_llm.remaining == 1  # the repair reply unused
        assert step.parsed["from_hint"] is True
        assert "HullName written hull_name" in step.parsed["hint_rewrite"]
        assert TAKEN in text_of(step)
    else:
        assert len(step.calls) == 2 and scripted_llm.remaining == 0
        assert "from_hint" not in step.parsed
