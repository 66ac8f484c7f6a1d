"""MAC-SQL's Selector and Decomposer against a scripted model and real SQLite files (value
grounding: ``test_macsql_grounding.py``; the Refiner, resuming and the embedded model:
``test_macsql_refiner.py``)."""

from __future__ import annotations

import json

import pytest

from agents.core.engine import ParseError, resume_run, run_to_end
from agents.pipelines.common import macsql_schema
from agents.pipelines.macsql import decomposer
from macsql_script import DECOMPOSER, PIPELINE, REFINER, SELECTOR, decomposition, requests_for, run
from scripted_llm import last_user_message


# -- Selector --------------------------------------------------------------------------------------
def test_selector_is_skipped_on_a_small_schema(small_db, llm, scripted_llm):
    scripted_llm.when(DECOMPOSER, decomposition(
        ("How many singers are from France?",
         "SELECT COUNT(*) FROM singer WHERE country = 'France'")))
    result = run(small_db, llm, use_selector="auto")

    assert result.status == "done"
    selector = result.events[0]
    assert (selector.agent, selector.status) == ("Selector", "skipped")
    assert selector.notes[0].startswith("schema small: 2 tables, 7 columns")
    assert selector.calls == [] and selector.data["selection"] is None
    assert requests_for(scripted_llm, SELECTOR) == []
    assert result.result["rows"] == [[2]]


def test_selector_runs_on_a_large_schema_and_drops_unknown_names(wide_db, llm, scripted_llm):
    scripted_llm.when(SELECTOR, "```json\n" + json.dumps({
        "t0": "keep_all",
        "t1": ["name", "bogus", "t1.value"],
        "t2": "drop_all",
        "ghost": "keep_all",
    }) + "\n```")
    scripted_llm.when(DECOMPOSER, decomposition(("Name of t1?", "SELECT name FROM t1")))
    result = run(wide_db, llm, "What is the name in t1?", use_selector="auto")

    assert result.status == "done", result.error
    selector = result.events[0]
    assert selector.status == "ok" and selector.parsed["used"] is True
    rows = {r["table"]: r for r in selector.parsed["tables"]}
    # keys stay (id: primary key, ref_id: foreign key to t0), the invented column does not
    assert rows["t1"]["decision"] == "columns"
    assert rows["t1"]["kept"] == ["id", "ref_id", "name", "value"]
    assert rows["t1"]["dropped"] == ["note"]
    assert rows["t2"] == {"table": "t2", "decision": "drop_all", "kept": [],
                          "dropped": ["id", "ref_id", "name", "value", "note"]}
    assert rows["t5"]["decision"] == "keep_all"  # not mentioned: kept, and said so
    notes = " | ".join(selector.notes)
    assert "'ghost'" in notes and "'bogus'" in notes and "t3, t4, t5, t6, t7" in notes

    selection = result.events[0].data["selection"]
    assert "t2" not in selection and "ghost" not in selection
    assert selection["t1"] == ["id", "ref_id", "name", "value"]
    decomposer_prompt = last_user_message(requests_for(scripted_llm, DECOMPOSER)[0])
    assert "# Table: t2" not in decomposer_prompt and "ghost" not in decomposer_prompt
    assert "bogus" not in decomposer_prompt and "(note," not in decomposer_prompt.split(
        "# Table: t1")[1].split("# Table:")[0]
    # structured output was requested with a permissive schema
    request = requests_for(scripted_llm, SELECTOR)[0]
    assert request["response_format"]["type"] in ("json_schema", "json_object")


def test_selector_retries_malformed_json_once_then_uses_the_whole_schema(wide_db, llm,
                                                                         scripted_llm):
    scripted_llm.when(SELECTOR, "I think tables t0 and t1 are relevant.")
    scripted_llm.when(DECOMPOSER, decomposition(("q", "SELECT name FROM t7")))
    result = run(wide_db, llm, use_selector="auto")

    assert result.status == "done", result.error
    selector = result.events[0]
    assert selector.agent == "Selector" and selector.status == "ok"
    assert selector.parsed == {"tables": [], "used": False}
    assert selector.data["selection"] is None
    assert len(selector.calls) == 2 and all("unparseable" in c.error for c in selector.calls)
    assert any("could not be parsed" in n and "whole schema is used" in n
               for n in selector.notes)
    retry = requests_for(scripted_llm, SELECTOR)[1]
    assert "could not be used" in last_user_message(retry)
    decomposer_prompt = last_user_message(requests_for(scripted_llm, DECOMPOSER)[0])
    assert "# Table: t0" in decomposer_prompt and "# Table: t7" in decomposer_prompt
    assert result.final_sql == "SELECT name FROM t7"


def test_an_unreachable_model_still_fails_the_selector_step(wide_db, scripted_llm):
    from agents.core.config import Settings
    from agents.llm.client import make_client

    dead = make_client(Settings(provider="openai", base_url="http://127.0.0.1:9/v1",
                                api_key="k", model="m", max_retries=0,
                                request_timeout=2))
    result = run(wide_db, dead, use_selector="auto")
    assert result.status == "failed"
    assert result.events[-1].agent == "Selector" and "model call failed" in result.error


def test_selector_accepts_the_retried_answer(wide_db, llm, scripted_llm):
    scripted_llm.push("no idea", '{"t0": "keep_all"}')
    scripted_llm.when(DECOMPOSER, decomposition(("q", "SELECT name FROM t0")))
    result = run(wide_db, llm, use_selector="auto")

    assert result.status == "done"
    assert len(result.events[0].calls) == 2
    assert result.events[0].data["selection"] == {"t0": "keep_all", "t1": "keep_all",
                                                  "t2": "keep_all", "t3": "keep_all",
                                                  "t4": "keep_all", "t5": "keep_all",
                                                  "t6": "keep_all", "t7": "keep_all"}


def test_selector_dropping_every_table_falls_back_to_the_whole_schema(wide_db, llm,
                                                                      scripted_llm):
    scripted_llm.when(SELECTOR, json.dumps({f"t{i}": "drop_all" for i in range(8)}))
    scripted_llm.when(DECOMPOSER, decomposition(("q", "SELECT name FROM t0")))
    result = run(wide_db, llm, use_selector="auto")

    assert result.events[0].data["selection"] is None
    assert any("dropped every table" in n for n in result.events[0].notes)
    assert "# Table: t7" in last_user_message(requests_for(scripted_llm, DECOMPOSER)[0])


@pytest.mark.parametrize("mode, expected", [("always", "ok"), ("never", "skipped")])
def test_use_selector_forces_the_choice(mode, expected, small_db, wide_db, llm, scripted_llm):
    db = small_db if mode == "always" else wide_db
    table = "singer" if mode == "always" else "t0"
    scripted_llm.when(SELECTOR, json.dumps({table: "keep_all"}))
    scripted_llm.when(DECOMPOSER, decomposition(("q", f"SELECT COUNT(*) FROM {table}")))
    result = run(db, llm, use_selector=mode)
    assert result.events[0].status == expected
    assert len(requests_for(scripted_llm, SELECTOR)) == (1 if mode == "always" else 0)


def test_context_mode_skips_the_selector_on_a_schema_the_decomposer_can_read_whole(
        wide_db, llm, scripted_llm):
    """40 columns: the reference rule prunes it, ``context`` leaves it whole."""
    scripted_llm.when(SELECTOR, json.dumps({"t0": "keep_all"}))
    scripted_llm.when(DECOMPOSER, decomposition(("q", "SELECT COUNT(*) FROM t0")))
    result = run(wide_db, llm, use_selector="context")

    selector = result.events[0]
    assert selector.step == "selector" and selector.status == "skipped"
    assert selector.inputs["mode"] == "context"
    assert "fits the Decomposer's prompt" in selector.notes[-1]
    assert not requests_for(scripted_llm, SELECTOR)
    assert "# Table: t7" in last_user_message(requests_for(scripted_llm, DECOMPOSER)[0])
    assert result.status == "done" and result.final_sql == "SELECT COUNT(*) FROM t0"


def test_context_is_the_default_and_runs_recorded_before_it_resume_with_the_reference_rule(
        wide_db, llm, scripted_llm):
    """A run recorded when ``auto`` was the default has no ``use_selector`` among its
    parameters: resumed at its Selector, the reference rule prunes the 40-column schema again,
    while a new run leaves it whole."""
    assert PIPELINE.resolve_params({})["use_selector"] == "context"
    assert PIPELINE.resolve_recorded({"decomposer_prompt": "graded"})["use_selector"] == "auto"
    scripted_llm.when(SELECTOR, json.dumps({"t0": "keep_all"}))
    scripted_llm.when(DECOMPOSER, decomposition(("q", "SELECT COUNT(*) FROM t0")))
    new = run(wide_db, llm)
    assert new.events[0].status == "skipped" and not requests_for(scripted_llm, SELECTOR)
    old = run(wide_db, llm, use_selector="auto")
    del old.params["use_selector"]
    resumed = run_to_end(resume_run(PIPELINE, old, 0, wide_db, llm))
    assert resumed.params["use_selector"] == "auto"
    assert resumed.events[0].status == "ok" and len(requests_for(scripted_llm, SELECTOR)) == 2


def test_context_mode_runs_the_selector_on_what_retrieval_kept_of_a_larger_schema(
        wide_db, scripted_llm):
    """A context too small for the whole schema: retrieval keeps part of it, and the Selector
    prunes that part, as the paper's Selector prunes a large database."""
    from agents.core.config import Settings
    from agents.llm.client import make_client
    from agents.pipelines.macsql.prompt_budget import RETRIEVAL
    from agents.llm.token_budget import estimate_tokens

    question = "What is the name of t3?"
    whole = estimate_tokens("\n".join(macsql_schema(wide_db.schema)))
    reserve = RETRIEVAL.reserve_for(PIPELINE.resolve_params(None))
    context = 1024 + reserve + 2 * estimate_tokens(question + "\n") + whole // 2
    small = make_client(Settings(provider="openai", base_url=scripted_llm.base_url,
                                 api_key="k", model="m", cache=False, max_retries=0,
                                 request_timeout=10.0, remote_context=context))
    scripted_llm.when(SELECTOR, json.dumps({"t3": "keep_all"}))
    scripted_llm.when(DECOMPOSER, decomposition(("q", "SELECT name FROM t3")))
    result = run(wide_db, small, question, use_selector="context")

    retrieve, selector = result.events[:2]
    assert retrieve.step == "retrieve" and selector.step == "selector"
    assert selector.status == "ok" and len(requests_for(scripted_llm, SELECTOR)) == 1
    kept = {row["table"] for row in retrieve.output.kept}
    assert "t3" in kept and len(kept) < 8
    assert {row["table"] for row in selector.output.tables} == kept
    assert result.status == "done" and result.final_sql == "SELECT name FROM t3"


# -- Decomposer ------------------------------------------------------------------------------------

def test_decomposer_parses_sub_questions_and_takes_the_last_sql():
    text = decomposition(
        ("Which singers are from France?", "SELECT singer_id FROM singer WHERE country = 'France'"),
        ("How many concerts did they give?",
         "SELECT COUNT(*) FROM concert WHERE singer_id IN (\n"
         "  SELECT singer_id FROM singer WHERE country = 'France')"),
    ) + ("\n==========\n[Database schema]\n# Table: x\n"
         "Sub question 1: invented\n```sql\nSELECT 9\n```")
    parsed = decomposer.parse_answer(text)
    assert [p["question"] for p in parsed["sub_questions"]] == [
        "Which singers are from France?", "How many concerts did they give?"]
    assert parsed["sql"].startswith("SELECT COUNT(*) FROM concert")
    assert parsed["sql"] == parsed["sub_questions"][-1]["sql"]


def test_decomposer_parsing_without_numbering_or_fences():
    unnumbered = ("**Sub question:** Count French singers\n```sql\nSELECT 1\n```\n"
                  "Then the final query:\n```sql\nSELECT COUNT(*) FROM singer\n```")
    parsed = decomposer.parse_answer(unnumbered)
    assert parsed["sql"] == "SELECT COUNT(*) FROM singer"
    assert parsed["sub_questions"][0]["question"] == "Count French singers"

    blocks_only = "```sql\nSELECT 1\n```\nand\n```sql\nSELECT 2\n```"
    assert [p["sql"] for p in decomposer.parse_answer(blocks_only)["sub_questions"]] == [
        "SELECT 1", "SELECT 2"]

    bare = "The answer is:\nSELECT name FROM singer WHERE age > 30;"
    assert decomposer.parse_answer(bare)["sql"] == "SELECT name FROM singer WHERE age > 30"

    with pytest.raises(ParseError, match="no SQL"):
        decomposer.parse_answer("I cannot answer that.")


def test_decomposer_uses_the_selection_and_shares_the_schema_text_with_the_refiner(
        wide_db, llm, scripted_llm):
    scripted_llm.when(SELECTOR, json.dumps({"t0": "keep_all", "t1": ["name"]}
                                           | {f"t{i}": "drop_all" for i in range(2, 8)}))
    scripted_llm.when(DECOMPOSER, decomposition(("q", "SELECT nam FROM t1")))
    scripted_llm.when(REFINER, "```sql\nSELECT name FROM t1\n```")
    result = run(wide_db, llm, "Names in t1?", use_selector="auto")

    assert result.status == "done"
    selection = result.events[0].data["selection"]
    desc, fks = macsql_schema(wide_db.schema, selection)
    schema_text = f"{desc}\n[Foreign keys]\n{fks}\n"
    decomposer_prompt = last_user_message(requests_for(scripted_llm, DECOMPOSER)[0])
    refiner_prompt = last_user_message(requests_for(scripted_llm, REFINER)[0])
    for prompt, static in ((decomposer_prompt, "Question Solved."),
                           (refiner_prompt, "[Constraints]")):
        assert schema_text in prompt  # byte-identical across the agents
        # static instructions and demonstrations first, then the schema, then the question
        assert prompt.rindex(static) < prompt.index(schema_text) < prompt.index("Names in t1?")
    assert "# Table: t2" not in decomposer_prompt


def test_a_table_copied_from_the_worked_example_is_named_so_in_the_decomposers_note(
        small_db, llm, scripted_llm):
    scripted_llm.when(DECOMPOSER, decomposition(
        ("q", "SELECT COUNT(*) FROM singer AS T1 JOIN district AS T2 ON T1.id = T2.id")))
    scripted_llm.when(REFINER, "```sql\nSELECT COUNT(*) FROM singer\n```")
    result = run(small_db, llm, use_selector="never")
    decomposer = next(e for e in result.events if e.agent == "Decomposer")
    assert decomposer.notes[-1] == ("the SQL names 'district', not a table of this database: "
                                    "copied from the prompt's worked example")
    # a made-up table the example does not have, a word only of the prompt's instructions
    # ("total"), and a subquery named as one of the example's tables get no such note
    scripted_llm.clear()
    scripted_llm.when(DECOMPOSER, decomposition(
        ("q", "WITH account AS (SELECT 1 AS n) SELECT COUNT(*) FROM ghosts JOIN total "
              "JOIN account")))
    scripted_llm.when(REFINER, "```sql\nSELECT COUNT(*) FROM singer\n```")
    result = run(small_db, llm, use_selector="never")
    decomposer = next(e for e in result.events if e.agent == "Decomposer")
    assert not any("worked example" in n for n in decomposer.notes)


def test_the_graded_decomposer_prompt_is_the_default_and_the_papers_is_a_switch_away(
        small_db, llm, scripted_llm):
    answer = decomposition(("How many singers are from France?",
                            "SELECT COUNT(*) FROM singer WHERE country = 'France'"))
    scripted_llm.when(DECOMPOSER, answer)
    default = run(small_db, llm)
    assert default.events[1].inputs["prompt"] == "graded"
    default_prompt = last_user_message(requests_for(scripted_llm, DECOMPOSER)[0])
    assert "write it as Sub question 1 and stop" in default_prompt

    scripted_llm.clear()
    scripted_llm.when(DECOMPOSER, answer)
    paper = run(small_db, llm, decomposer_prompt="paper")
    paper_prompt = last_user_message(requests_for(scripted_llm, DECOMPOSER)[0])
    assert "Sub question 1: Get the average value of SAT excellence rate" in paper_prompt
    assert "write it as Sub question 1 and stop" not in paper_prompt
    assert paper.events[1].inputs["prompt"] == "paper"

    scripted_llm.clear()
    scripted_llm.when(DECOMPOSER, answer)
    compact = run(small_db, llm, decomposer_prompt="compact")
    compact_prompt = last_user_message(requests_for(scripted_llm, DECOMPOSER)[0])
    # no demonstration to copy, the same schema text and answer format, and the trace says so
    assert "satscores" not in compact_prompt and "frpm" not in compact_prompt
    assert compact_prompt.split("[Database schema]")[-1] == paper_prompt.split(
        "[Database schema]")[-1]
    assert "selects every value the question asks for" in compact_prompt
    assert compact.events[1].inputs["prompt"] == "compact"
    assert compact.result["rows"] == paper.result["rows"] == [[2]]


def test_a_run_recorded_before_the_default_changed_resumes_with_the_papers_prompt(
        small_db, llm, scripted_llm):
    """A run recorded when the paper's prompt was the default has no ``decomposer_prompt``
    among its parameters; resumed at its Decomposer it sends the paper's prompt again, while a
    run that names its prompt keeps it."""
    scripted_llm.when(DECOMPOSER, decomposition((
        "How many singers are from France?",
        "SELECT COUNT(*) FROM singer WHERE country = 'France'")))
    old = run(small_db, llm, decomposer_prompt="paper")
    del old.params["decomposer_prompt"]
    at = [e.step for e in old.events].index("decomposer")
    for recorded, expected in [(old, "paper"), (run(small_db, llm), "graded")]:
        resumed = run_to_end(resume_run(PIPELINE, recorded, at, small_db, llm))
        assert resumed.status == "done", resumed.error
        assert resumed.params["decomposer_prompt"] == expected
        assert resumed.events[at].inputs["prompt"] == expected
        sent = last_user_message(requests_for(scripted_llm, DECOMPOSER)[-1])
        assert ("write it as Sub question 1 and stop" in sent) == (expected == "graded")


def test_the_graded_decomposer_prompt_is_the_papers_with_a_one_step_demonstration(
        small_db, llm, scripted_llm):
    answer = decomposition(("How many singers are from France?",
                            "SELECT COUNT(*) FROM singer WHERE country = 'France'"))
    scripted_llm.when(DECOMPOSER, answer)
    run(small_db, llm, decomposer_prompt="paper")
    paper_prompt = last_user_message(requests_for(scripted_llm, DECOMPOSER)[0])
    scripted_llm.clear()
    scripted_llm.when(DECOMPOSER, answer)
    graded = run(small_db, llm, decomposer_prompt="graded")
    graded_prompt = last_user_message(requests_for(scripted_llm, DECOMPOSER)[0])
    demonstrations = graded_prompt.split("==========")
    # the paper's two demonstrations, unchanged, then one simple question answered in one step
    # with no join, then the question asked
    assert demonstrations[1:3] == paper_prompt.split("==========")[1:3]
    assert demonstrations[-1] == paper_prompt.split("==========")[-1]
    simple = demonstrations[3]
    assert simple.count("Sub question") == 1 and "JOIN" not in simple.upper().split("[QUESTION]")[1]
    assert "write it as Sub question 1 and stop" in demonstrations[0]
    assert graded.events[1].inputs["prompt"] == "graded"
    assert graded.result["rows"] == [[2]]


def test_each_decomposer_prompt_fits_in_the_reserve_retrieval_leaves_it():
    """On a database over the context, retrieval sizes the schema to leave the Decomposer's
    instructions and demonstrations room; the longer graded prompt must get more."""
    from agents.llm.prompts import load
    from agents.llm.token_budget import estimate_tokens
    for variant, name in decomposer.PROMPTS.items():
        static = estimate_tokens(load(str(decomposer.HERE), name))
        assert static < PIPELINE.retrieval.reserve_for({"decomposer_prompt": variant}), variant
