"""``python -m agents eval``: end to end on a tiny dataset, usage errors, and the manifest that
keeps a resumed evaluation from mixing answers given under other settings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tiny_dataset import build_tiny, raw_lines, read


@pytest.fixture
def tiny(tmp_path) -> Path:
    return build_tiny(tmp_path / "tiny")


def test_eval_command_end_to_end(tiny, tmp_path, scripted_llm, monkeypatch, capsys):
    from agents.cli.main import main
    from agents.store import Store

    monkeypatch.setenv("OPENAI_BASE_URL", scripted_llm.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    scripted_llm.when(lambda req: True, "```sql\nSELECT count(*) FROM people\n```")
    out = tmp_path / "out"
    args = ["eval", "--data", str(tiny), "--pipelines", "baseline", "--limit", "4",
            "--out", str(out), "--no-cache", "--save-runs", "--workers", "2"]
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "1 skipped, database missing (lost: 1)" in printed
    records = read(out)
    assert len(records) == 4 and sum(r["correct"] for r in records) == 1
    assert (out / "report.md").is_file() and (out / "manifest.json").is_file()
    report = json.loads((out / "report.json").read_text())
    assert report["sample"]["size"] == 4 and report["dataset"]["missing_by_db"] == {"lost": 1}
    assert report["pipelines"]["baseline"]["llm_calls_per_q"] == 1

    with Store() as store:
        saved = store.list_runs(source="eval")
    assert len(saved) == 4 and {r["pipeline"] for r in saved} == {"baseline"}

    # same folder, larger limit: only the new questions run
    assert main(args[:6] + ["6"] + args[7:]) == 0
    assert len(raw_lines(out)) == 6
    # a different seed would mix two samples: refused
    assert main(args + ["--seed", "5"]) == 2
    assert "other settings" in capsys.readouterr().err
    # so would repair prompts without the name-error hint
    assert main(args + ["--no-error-hints"]) == 2
    assert "error_hints: True there, False now" in capsys.readouterr().err
    assert report["settings"]["name-error hints"] == "on"


def test_eval_command_refuses_to_resume_with_other_examples_or_params(tiny, tmp_path, scripted_llm,
                                                                      monkeypatch, capsys):
    from agents.cli.main import main

    monkeypatch.setenv("OPENAI_BASE_URL", scripted_llm.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    scripted_llm.when(lambda req: True, "```sql\nSELECT count(*) FROM people\n```")
    examples, other = tmp_path / "train.json", tmp_path / "other" / "train.json"
    other.parent.mkdir()
    for path in (examples, other):
        path.write_text(json.dumps([{"db_id": "town", "question": "How many people are there?",
                                     "query": "SELECT count(*) FROM people"}]))
    out = tmp_path / "out"

    def evaluate(*extra: str) -> int:
        return main(["eval", "--data", str(tiny), "--pipelines", "baseline", "--limit", "2",
                     "--out", str(out), "--no-cache", *extra])

    same = ["--examples", str(examples), "--param", "baseline.schema_format=macsql"]
    assert evaluate(*same) == 0
    capsys.readouterr()
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["examples"] == str(examples.resolve())
    assert manifest["sample_seed"] == 0     # sampled requests carry a seed: a rerun repeats
    assert manifest["params"] == {"baseline": {"schema_format": "macsql", "keep_whole_part": True}}

    # another example file, or none, would mix few-shot settings: refused
    assert evaluate("--examples", str(other), "--param", "baseline.schema_format=macsql") == 2
    assert f"examples: {str(examples.resolve())!r} there, {str(other.resolve())!r} now" in \
        capsys.readouterr().err
    assert evaluate("--param", "baseline.schema_format=macsql") == 2
    assert "examples:" in capsys.readouterr().err
    # so would the same pipeline with other parameters (a default written out is the default)
    assert evaluate("--examples", str(examples)) == 2
    err = capsys.readouterr().err
    assert "other settings" in err and "params: {'baseline': {'schema_format': 'macsql'}} " \
        "there, {'baseline': {'schema_format': 'ddl'}} now" in err
    assert evaluate("--examples", str(examples), "--param", "baseline.schema_format=ddl") == 2
    capsys.readouterr()
    # the same settings resume
    assert evaluate(*same) == 0
    assert "0 new, 2 already in the results file" in capsys.readouterr().out


def test_manifest_params_are_compared_for_the_pipelines_evaluated_now(tmp_path):
    from agents.cli.main import UsageError
    from agents.evaluation.manifest import RESUME_KEYS, check_manifest as _check_manifest

    assert {"examples", "params"} <= set(RESUME_KEYS)
    base = {"dataset": "d", "sample_mode": "stratified", "seed": 7, "keep_distinct": False,
            "model": "m", "error_hints": True, "examples": None}
    _check_manifest(tmp_path, {**base, "params": {"macsql": {"max_refine": 1}}})
    # another pipeline, evaluated into the same folder with its own parameters: fine
    _check_manifest(tmp_path, {**base, "params": {"csma": {"n_agents": 3}}})
    recorded = json.loads((tmp_path / "manifest.json").read_text())["params"]
    assert recorded == {"macsql": {"max_refine": 1}, "csma": {"n_agents": 3}}
    # a pipeline already there, with other parameters: refused
    with pytest.raises(UsageError, match="params: .*'max_refine': 1.* there"):
        _check_manifest(tmp_path, {**base, "params": {"macsql": {}}})
    # a manifest written before examples and params were recorded resumes as before
    old = {k: v for k, v in base.items() if k != "examples"}
    (tmp_path / "manifest.json").write_text(json.dumps(old))
    _check_manifest(tmp_path, {**base, "examples": "/x/train.json", "params": {"r3": {}}})


FINAL_CHECK = ("drop_unread_joins", "drop_unread_from_table", "read_through_join_keys",
               "drop_unrelated_part_joins", "match_stored_case")   # the Final check's rules
# repair_from_hint came after every folder below: off in what each of them ran
FINAL_CHECK_OFF = {**{name: False for name in FINAL_CHECK}, "repair_from_hint": False}
FINAL_CHECK_ON = {**{name: True for name in FINAL_CHECK}, "repair_from_hint": True}
WRITER_OFF, WRITER_ON = {"fresh_writer": False}, {"fresh_writer": True}  # macsql, deasql, r3

def test_a_manifest_recorded_before_a_default_changed_keeps_what_it_ran(tmp_path):
    """MAC-SQL's Decomposer prompt was the paper's by default when a folder recorded
    ``{"macsql": {}}``: resuming it with today's default (graded) would mix two prompts in one
    results file, so it is refused; asked for the paper's prompt, it resumes. A manifest written
    now names the parameter whose default changed, so a later change cannot blur it."""
    from agents.cli.main import UsageError
    from agents.evaluation.manifest import check_manifest as _check_manifest, recorded_params as _recorded_params
    from agents.pipelines import get_pipeline

    macsql = get_pipeline("macsql")
    assert macsql.replay_defaults() == {"decomposer_prompt": "paper", "refiner_prompt": "paper",
                                       "name_rewrite": False, "use_selector": "auto",
                                       "value_grounding": "off", **FINAL_CHECK_OFF,
                                       **WRITER_OFF}
    base = {"dataset": "d", "sample_mode": "stratified", "seed": 8, "keep_distinct": False,
            "model": "m", "error_hints": True, "examples": None}
    (tmp_path / "manifest.json").write_text(json.dumps({**base, "params": {"macsql": {}}}))
    today = _recorded_params({}, [macsql])
    assert today == {"macsql": {"decomposer_prompt": "graded", "refiner_prompt": "tables",
                                "name_rewrite": True, "use_selector": "context",
                                "value_grounding": "examples", **FINAL_CHECK_ON,
                                **WRITER_ON}}
    with pytest.raises(UsageError, match="'decomposer_prompt': 'paper'.* there, .*"
                                         "'decomposer_prompt': 'graded'.* now"):
        _check_manifest(tmp_path, {**base, "params": today})
    paper = _recorded_params({"macsql": {"decomposer_prompt": "paper",
                                         "refiner_prompt": "paper", "name_rewrite": False,
                                         "use_selector": "auto", "value_grounding": "off",
                                         **FINAL_CHECK_OFF, **WRITER_OFF}}, [macsql])
    _check_manifest(tmp_path, {**base, "params": paper})
    # a folder evaluated with both variants asked for by name, before the runnable ending,
    # resumes with it off only
    (tmp_path / "manifest.json").write_text(json.dumps({**base, "params": {"macsql": {
        "decomposer_prompt": "graded", "refiner_prompt": "tables"}}}))
    with pytest.raises(UsageError, match="'name_rewrite': False.* there, "
                                         ".*'name_rewrite': True"):
        _check_manifest(tmp_path, {**base, "params": today})
    _check_manifest(tmp_path, {**base, "params": _recorded_params(
        {"macsql": {"name_rewrite": False, "use_selector": "auto", "value_grounding": "off",
                    **FINAL_CHECK_OFF, **WRITER_OFF}}, [macsql])})
    # DEA-SQL's and CSMA's paper variants were their defaults before the compact ones, and
    # R³'s paper behaviour before its small-model options; a folder of each resumes with what
    # it ran
    r3_paper = {"writer_style": "cot", "review_prompt": "paper", "revision_gate": "paper",
                "fix_prompt": "paper", "name_rewrite": False, "aggregate_gate": False,
                **FINAL_CHECK_OFF, **WRITER_OFF}
    r3_small = {"writer_style": "direct", "review_prompt": "strict",
                "revision_gate": "execution", "fix_prompt": "tables", "name_rewrite": True,
                "aggregate_gate": True, **FINAL_CHECK_ON, **WRITER_ON}
    for name, paper, small, refused in (
            ("deasql", {"variant": "paper", "name_rewrite": False, **FINAL_CHECK_OFF,
                        **WRITER_OFF},
             {"variant": "compact", "name_rewrite": True, **FINAL_CHECK_ON, **WRITER_ON},
             "'variant': 'paper'.* there, .*'variant': 'compact'"),
            ("csma", {"variant": "paper", "check_method": "verdict", "name_rewrite": False,
                      "ignore_unread_joins": False, "global_writer": False, "global_check": False,
                      "global_data_first": False, **FINAL_CHECK_OFF},
             {"variant": "compact", "check_method": "agreement", "name_rewrite": True,
              "ignore_unread_joins": True, "global_writer": True, "global_check": True,
              "global_data_first": True, **FINAL_CHECK_ON},
             "'variant': 'paper'.* there, .*'variant': 'compact'"),
            ("r3", r3_paper, r3_small, "'writer_style': 'cot'.* there, .*'writer_style': "
                                       "'direct'")):
        pipeline = get_pipeline(name)
        (tmp_path / "manifest.json").write_text(json.dumps({**base, "params": {name: {}}}))
        with pytest.raises(UsageError, match=refused):
            _check_manifest(tmp_path, {**base, "params": _recorded_params({}, [pipeline])})
        _check_manifest(tmp_path, {**base, "params": _recorded_params({name: paper},
                                                                      [pipeline])})
        (tmp_path / "manifest.json").write_text(json.dumps({**base, "params": {name: small}}))
        _check_manifest(tmp_path, {**base, "params": _recorded_params({}, [pipeline])})
    # R³'s small-model folders recorded before the aggregate gate resume with it off only
    r3 = get_pipeline("r3")
    (tmp_path / "manifest.json").write_text(json.dumps({**base, "params": {"r3": {
        k: v for k, v in r3_small.items() if k != "aggregate_gate"}}}))
    with pytest.raises(UsageError, match="'aggregate_gate': False.* there, "
                                         ".*'aggregate_gate': True"):
        _check_manifest(tmp_path, {**base, "params": _recorded_params({}, [r3])})
    _check_manifest(tmp_path, {**base, "params": _recorded_params(
        {"r3": {"aggregate_gate": False}}, [r3])})
    # CSMA's compact variant ran with the model's verdict before the agreement check was its
    # default: such a folder resumes only when asked for the verdict
    csma = get_pipeline("csma")
    (tmp_path / "manifest.json").write_text(json.dumps(
        {**base, "params": {"csma": {"variant": "compact"}}}))
    with pytest.raises(UsageError, match="'check_method': 'verdict'.* there, "
                                         ".*'check_method': 'agreement'"):
        _check_manifest(tmp_path, {**base, "params": _recorded_params({}, [csma])})
    _check_manifest(tmp_path, {**base, "params": _recorded_params(
        {"csma": {"check_method": "verdict", "name_rewrite": False,
                  "ignore_unread_joins": False, "global_writer": False,
                  "global_check": False, "global_data_first": False, **FINAL_CHECK_OFF}}, [csma])})
    # ... and one with the agreement check, before agents took the version that runs, only
    # when asked to leave failing SQL as written
    (tmp_path / "manifest.json").write_text(json.dumps(
        {**base, "params": {"csma": {"variant": "compact", "check_method": "agreement"}}}))
    with pytest.raises(UsageError, match="'name_rewrite': False.* there, "
                                         ".*'name_rewrite': True"):
        _check_manifest(tmp_path, {**base, "params": _recorded_params({}, [csma])})
    _check_manifest(tmp_path, {**base, "params": _recorded_params(
        {"csma": {"name_rewrite": False, "ignore_unread_joins": False,
                  "global_writer": False, "global_check": False, "global_data_first": False,
                  **FINAL_CHECK_OFF}}, [csma])})
    # ... and one with the rewrite, before the check ignored a join its own SQL reads nothing
    # of, only when asked to compare every join
    (tmp_path / "manifest.json").write_text(json.dumps({**base, "params": {"csma": {
        "variant": "compact", "check_method": "agreement", "name_rewrite": True}}}))
    with pytest.raises(UsageError, match="'ignore_unread_joins': False.* there, "
                                         ".*'ignore_unread_joins': True"):
        _check_manifest(tmp_path, {**base, "params": _recorded_params({}, [csma])})
    _check_manifest(tmp_path, {**base, "params": _recorded_params(
        {"csma": {"ignore_unread_joins": False, "global_writer": False,
                  "global_check": False, "global_data_first": False, **FINAL_CHECK_OFF}}, [csma])})
    # ... and one with every default before the global writer, only with it off
    (tmp_path / "manifest.json").write_text(json.dumps({**base, "params": {"csma": {
        "variant": "compact", "check_method": "agreement", "name_rewrite": True,
        "ignore_unread_joins": True, **FINAL_CHECK_ON}}}))
    with pytest.raises(UsageError, match="'global_writer': False.* there, "
                                         ".*'global_writer': True"):
        _check_manifest(tmp_path, {**base, "params": _recorded_params({}, [csma])})
    _check_manifest(tmp_path, {**base, "params": _recorded_params(
        {"csma": {"global_writer": False, "global_check": False, "global_data_first": False}},
        [csma])})
    # ... and one with the global writer and its check, before a result without data weighed
    # less, only with that off
    (tmp_path / "manifest.json").write_text(json.dumps({**base, "params": {"csma": {
        "variant": "compact", "check_method": "agreement", "name_rewrite": True,
        "ignore_unread_joins": True, "global_writer": True, "global_check": True,
        **FINAL_CHECK_ON}}}))
    with pytest.raises(UsageError, match="'global_data_first': False.* there, "
                                         ".*'global_data_first': True"):
        _check_manifest(tmp_path, {**base, "params": _recorded_params({}, [csma])})
    _check_manifest(tmp_path, {**base, "params": _recorded_params(
        {"csma": {"global_data_first": False}}, [csma])})
    # a baseline folder recorded before the whole part was kept resumes with it off only
    baseline = get_pipeline("baseline")
    (tmp_path / "manifest.json").write_text(json.dumps({**base, "params": {"baseline": {}}}))
    assert _recorded_params({}, [baseline]) == {"baseline": {"keep_whole_part": True}}
    with pytest.raises(UsageError, match="'keep_whole_part': False.* there, "
                                         ".*'keep_whole_part': True"):
        _check_manifest(tmp_path, {**base, "params": _recorded_params({}, [baseline])})
    _check_manifest(tmp_path, {**base, "params": _recorded_params(
        {"baseline": {"keep_whole_part": False}}, [baseline])})
    # a folder of any of the five recorded before the Final check resumes with it off only
    for name in ("macsql", "deasql", "r3", "csma", "selection"):
        pipeline = get_pipeline(name)
        now = _recorded_params({}, [pipeline])
        before = {name: {k: v for k, v in now[name].items() if k not in FINAL_CHECK}}
        (tmp_path / "manifest.json").write_text(json.dumps({**base, "params": before}))
        with pytest.raises(UsageError, match="'drop_unread_joins': False.* there, "
                                             ".*'drop_unread_joins': True"):
            _check_manifest(tmp_path, {**base, "params": now})
        _check_manifest(tmp_path, {**base, "params": _recorded_params(
            {name: {k: False for k in FINAL_CHECK}}, [pipeline])})


def test_a_manifest_written_before_parameters_were_recorded_keeps_the_defaults_of_its_time(
        tmp_path):
    """The oldest manifests have no ``params``: the pipelines with results in the folder ran
    with their defaults of that time, so a resume with today's changed defaults is refused
    and one asking for the earlier values is accepted and written down."""
    from agents.cli.main import UsageError
    from agents.evaluation.manifest import check_manifest as _check_manifest, recorded_params as _recorded_params
    from agents.pipelines import get_pipeline

    base = {"dataset": "d", "sample_mode": "stratified", "seed": 7, "keep_distinct": False,
            "model": "m", "error_hints": True, "examples": None}
    (tmp_path / "manifest.json").write_text(json.dumps(base))
    (tmp_path / "results.jsonl").write_text(json.dumps(
        {"question_id": 1, "pipeline": "deasql", "correct": True}) + "\n")
    deasql = get_pipeline("deasql")
    with pytest.raises(UsageError, match="'variant': 'paper'.* there"):
        _check_manifest(tmp_path, {**base, "params": _recorded_params({}, [deasql])})
    paper = _recorded_params({"deasql": {"variant": "paper", "name_rewrite": False,
                                         **FINAL_CHECK_OFF, **WRITER_OFF}}, [deasql])
    _check_manifest(tmp_path, {**base, "params": paper})
    written = json.loads((tmp_path / "manifest.json").read_text())
    assert written["params"] == {"deasql": {"variant": "paper", "name_rewrite": False,
                                            **FINAL_CHECK_OFF, **WRITER_OFF}}
    # a pipeline not evaluated there before is free to join the folder with its defaults
    baseline = get_pipeline("baseline")
    _check_manifest(tmp_path, {**base, "params": _recorded_params({}, [baseline])})


@pytest.mark.parametrize("extra, message", [
    (["--pipelines", "nosuch"], "unknown pipeline"),
    (["--pipelines", "baseline", "--param", "baseline.nosuch=1"], "no parameter"),
    (["--pipelines", "baseline", "--param", "oops"], "PIPELINE.NAME=VALUE"),
    (["--pipelines", "baseline", "--examples", "/nonexistent/train.json"], "--examples"),
])
def test_eval_command_usage_errors(tiny, tmp_path, extra, message, capsys):
    from agents.cli.main import main

    assert main(["eval", "--data", str(tiny), "--out", str(tmp_path)] + extra) == 2
    assert message in capsys.readouterr().err


def test_eval_command_missing_dataset(tmp_path, capsys):
    from agents.cli.main import main

    assert main(["eval", "--data", str(tmp_path / "nowhere"), "--pipelines", "baseline"]) == 2
    assert "dataset folder not found" in capsys.readouterr().err


def test_eval_command_runs_serially_on_the_embedded_model(tiny, tmp_path, llm, monkeypatch,
                                                          capsys, scripted_llm):
    """Provider 'local' serves one request at a time: --workers is forced to 1, with a note."""
    import agents.llm.client
    from agents.cli.main import main

    monkeypatch.setenv("STUDIO_PROVIDER", "local")
    monkeypatch.setattr(agents.llm.client, "make_client", lambda settings: llm)
    scripted_llm.when(lambda req: True, "SELECT name FROM people")
    out = tmp_path / "out"
    assert main(["eval", "--data", str(tiny), "--pipelines", "baseline", "--limit", "2",
                 "--workers", "4", "--out", str(out)]) == 0
    assert "workers forced to 1" in capsys.readouterr().out
    report = json.loads((out / "report.json").read_text())
    assert report["settings"]["workers"] == 1
    assert any("workers forced to 1" in n for n in report["notes"])
