"""Loading Spider/BIRD-format evaluation folders and drawing the seeded sample."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections import Counter
import os
from pathlib import Path

import pytest

from agents.evaluation.dataset import DatasetError, SampleSpec, load_dataset, sample_questions
from agents.evaluation.prompt_overlap import prompt_texts, quoted_questions

# The Spider dev set lives in the shared folder beside the checkout (never in the repository).
SPIDER = Path(os.environ.get("SPIDER_DIR")
              or Path(__file__).resolve().parents[2] / "shared" / "data" / "spider")
needs_spider = pytest.mark.skipif(not (SPIDER / "dev.json").is_file(),
                                  reason="the Spider dev set is not on this machine")


def make_folder(root: Path, items: list[dict], dbs: list[str], db_dir: str = "database",
                name: str = "dev.json") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / name).write_text(json.dumps(items))
    for db in dbs:
        (root / db_dir / db).mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(root / db_dir / db / f"{db}.sqlite")
        conn.execute("CREATE TABLE t (x INTEGER)")
        conn.commit()
        conn.close()
    return root


@needs_spider
def test_spider_dev_counts_the_questions_without_a_database():
    ds = load_dataset(SPIDER)
    assert ds.total == 1034
    assert len(ds.questions) == 972
    assert ds.missing_by_db() == {"wta_1": 62}
    assert ds.hardness_counts() == {"easy": 232, "medium": 416, "hard": 160, "extra": 164}
    assert all(Path(q.db_path).is_file() for q in ds.questions)
    assert [q.qid for q in ds.questions] == sorted(q.qid for q in ds.questions)


@needs_spider
def test_stratified_sample_keeps_the_hardness_mix_and_is_deterministic():
    ds = load_dataset(SPIDER)
    first = sample_questions(ds.questions, 100, "stratified", seed=3)
    again = sample_questions(ds.questions, 100, "stratified", seed=3)
    other = sample_questions(ds.questions, 100, "stratified", seed=4)
    assert [q.qid for q in first] == [q.qid for q in again]
    assert [q.qid for q in first] != [q.qid for q in other]
    assert len(first) == 100 and len({q.qid for q in first}) == 100
    counts = Counter(q.hardness for q in first)
    full = ds.hardness_counts()
    for level, n in full.items():
        assert abs(counts[level] - 100 * n / 972) < 1  # largest-remainder quota
    assert [q.qid for q in first] == sorted(q.qid for q in first)  # dataset order


def test_a_larger_limit_extends_the_sample(tmp_path):
    items = [{"db_id": "d", "question": f"q{i}", "query": "SELECT 1",
              "hardness": ["easy", "medium", "hard"][i % 3]} for i in range(60)]
    ds = load_dataset(make_folder(tmp_path, items, ["d"]))
    for mode in ("stratified", "random", "first"):
        small = {q.qid for q in sample_questions(ds.questions, 9, mode, seed=1)}
        large = {q.qid for q in sample_questions(ds.questions, 30, mode, seed=1)}
        assert len(small) == 9 and len(large) == 30
        assert small <= large, mode


def test_sample_modes_and_limits(tmp_path):
    items = [{"db_id": "d", "question": f"q{i}", "query": "SELECT 1"} for i in range(10)]
    ds = load_dataset(make_folder(tmp_path, items, ["d"]))
    assert [q.qid for q in sample_questions(ds.questions, 3, "first")] == [0, 1, 2]
    assert len(sample_questions(ds.questions, None)) == 10
    assert len(sample_questions(ds.questions, 50)) == 10
    assert sample_questions(ds.questions, 0) == []
    with pytest.raises(DatasetError, match="sample mode"):
        sample_questions(ds.questions, 3, "best")


def test_bird_layout_with_evidence_and_difficulty(tmp_path):
    items = [{"question_id": 7, "db_id": "shop", "question": "How many?",
              "evidence": "sold means status = 1", "SQL": "SELECT count(*) FROM t",
              "difficulty": "simple"},
             {"question_id": 9, "db_id": "gone", "question": "Who?", "SQL": "SELECT 1",
              "difficulty": "challenging"}]
    ds = load_dataset(make_folder(tmp_path, items, ["shop"], db_dir="dev_databases"))
    (q,) = ds.questions
    assert (q.qid, q.evidence, q.hardness, q.gold_sql) == (
        7, "sold means status = 1", "simple", "SELECT count(*) FROM t")
    assert ds.missing_by_db() == {"gone": 1}


def test_a_questions_file_can_be_given_directly(tmp_path):
    folder = make_folder(tmp_path, [{"db_id": "d", "question": "q", "query": "SELECT 1"}],
                         ["d"], name="mini.json")
    assert len(load_dataset(folder / "mini.json").questions) == 1


@pytest.mark.parametrize("content, message", [
    (None, "dataset folder not found"),
    ("", "no dev.json"),
    ("{not json", "not valid JSON"),
    ('{"a": 1}', "JSON list"),
    ('[{"db_id": "d", "question": "q"}]', "entry 0: missing or empty 'query'"),
    ('[{"db_id": "d", "question": "", "query": "SELECT 1"}]', "missing or empty 'question'"),
])
def test_bad_folders_get_clear_errors(tmp_path, content, message):
    folder = tmp_path / "data"
    if content is not None:
        folder.mkdir()
        if content:
            (folder / "dev.json").write_text(content)
    with pytest.raises(DatasetError, match=message):
        load_dataset(folder)


# -- samples that leave questions out ----------------------------------------------------------------
def hardness_items(n: int = 90) -> list[dict]:
    return [{"db_id": "d", "question": f"q{i}", "query": "SELECT 1",
             "hardness": ["easy", "medium", "medium", "hard", "extra"][i % 5]} for i in range(n)]


def test_excluding_questions_a_sample_did_not_hold_leaves_it_unchanged(tmp_path):
    ds = load_dataset(make_folder(tmp_path, hardness_items(), ["d"]))
    for mode in ("stratified", "random", "first"):
        base = [q.qid for q in sample_questions(ds.questions, 20, mode, seed=3)]
        outside = [q.qid for q in ds.questions if q.qid not in base][:15]
        assert [q.qid for q in sample_questions(ds.questions, 20, mode, seed=3,
                                                exclude=outside)] == base, mode
        inside = base[:2]
        replaced = [q.qid for q in sample_questions(ds.questions, 20, mode, seed=3,
                                                    exclude=inside)]
        assert len(replaced) == 20 and not set(inside) & set(replaced), mode
        assert len(set(base) - set(replaced)) == 2, mode  # only the excluded ones replaced


def test_a_second_sample_excluding_the_first_is_disjoint_with_the_same_mix(tmp_path):
    ds = load_dataset(make_folder(tmp_path, hardness_items(), ["d"]))
    first = sample_questions(ds.questions, 20, "stratified", seed=7)
    first_ids = {q.qid for q in first}
    for seed in (7, 8):
        second = sample_questions(ds.questions, 20, "stratified", seed=seed, exclude=first_ids)
        again = sample_questions(ds.questions, 20, "stratified", seed=seed, exclude=first_ids)
        assert [q.qid for q in second] == [q.qid for q in again]
        assert len(second) == 20 and not first_ids & {q.qid for q in second}
        assert Counter(q.hardness for q in second) == Counter(q.hardness for q in first)
        larger = sample_questions(ds.questions, 30, "stratified", seed=seed, exclude=first_ids)
        assert {q.qid for q in second} <= {q.qid for q in larger}  # still extends


def test_a_level_too_short_after_exclusion_splits_what_is_left(tmp_path):
    ds = load_dataset(make_folder(tmp_path, hardness_items(), ["d"]))
    extra = [q.qid for q in ds.questions if q.hardness == "extra"]
    sample = sample_questions(ds.questions, 20, "stratified", seed=1, exclude=extra[2:])
    assert len(sample) == 20
    counts = Counter(q.hardness for q in sample)
    assert counts["extra"] == 2  # all that is left; the other levels make up the difference
    assert counts == {"easy": 5, "medium": 9, "hard": 4, "extra": 2}  # was 4, 8, 4, 4
    assert len(sample_questions(ds.questions, None, exclude=extra)) == 90 - len(extra)


@pytest.mark.parametrize("text, spec", [
    ("7:100", SampleSpec("stratified", 7, 100)),
    ("random:3:10", SampleSpec("random", 3, 10)),
    (" first:0:5 ", SampleSpec("first", 0, 5)),
])
def test_sample_specs_are_parsed(text, spec):
    assert SampleSpec.parse(text) == spec
    assert SampleSpec.parse(str(spec)) == spec


@pytest.mark.parametrize("text", ["7", "best:7:100", "x:100", "7:100:3:1", "7:-1", ""])
def test_bad_sample_specs_get_clear_errors(text):
    with pytest.raises(DatasetError, match="SEED:LIMIT"):
        SampleSpec.parse(text)


# -- questions quoted in a prompt ----------------------------------------------------------------------
PROMPT = """Examples:
Q: Show names for all stadiums except for stadiums having a concert in year 2014.
A: SELECT name FROM stadium EXCEPT ...
what is the average, minimum, and maximum age of all singers from Chinese?
Q: How many heads?
"""
QUOTED_ITEMS = [
    {"db_id": "d", "question": "Show names for all stadiums except for stadiums having a "
                               "concert in year 2014.", "query": "SELECT 1"},        # verbatim
    {"db_id": "d", "question": "What is the average, minimum, and maximum age of all singers "
                               "from France?", "query": "SELECT 1"},                # one word
    {"db_id": "d", "question": "What is the average, minimum, and maximum age for all French "
                               "singers?", "query": "SELECT 1"},                    # paraphrase
    {"db_id": "d", "question": "How many heads?", "query": "SELECT 1"},            # short
    {"db_id": "d", "question": "How many?", "query": "SELECT 1"},        # part of a sentence
    {"db_id": "d", "question": "List the singers.", "query": "SELECT 1"},
]


def test_questions_quoted_verbatim_or_nearly_are_found_and_paraphrases_are_not(tmp_path):
    ds = load_dataset(make_folder(tmp_path, QUOTED_ITEMS, ["d"]))
    hits = quoted_questions(ds.questions, {"deasql/prompts/x.txt": PROMPT})
    assert [(h.qid, h.share, h.source) for h in hits] == [
        (0, 1.0, "deasql/prompts/x.txt"), (1, 0.9, "deasql/prompts/x.txt"),
        (3, 1.0, "deasql/prompts/x.txt")]
    assert [h.qid for h in quoted_questions(ds.questions, {"p": PROMPT}, min_share=0.5)] == \
        [0, 1, 2, 3]


def test_prompt_texts_reads_every_pipeline_prompt_file(tmp_path):
    (tmp_path / "one" / "prompts").mkdir(parents=True)
    (tmp_path / "one" / "prompts" / "a.txt").write_text("hello")
    (tmp_path / "one" / "notes.txt").write_text("not a prompt")
    assert prompt_texts(tmp_path) == {"one/prompts/a.txt": "hello"}
    assert any(name.endswith(".txt") for name in prompt_texts())  # the real pipelines


# -- the eval command with exclusions -----------------------------------------------------------------
@pytest.fixture
def eval_env(tmp_path, scripted_llm, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", scripted_llm.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    scripted_llm.when(lambda req: True, "```sql\nSELECT 1\n```")
    prompts = tmp_path / "pipelines"
    (prompts / "fake" / "prompts").mkdir(parents=True)
    (prompts / "fake" / "prompts" / "p.txt").write_text("Q: q7 is quoted here")
    monkeypatch.setattr("agents.evaluation.prompt_overlap.PIPELINES_DIR", prompts)
    items = [{"db_id": "d", "question": f"q{i}" + (" is quoted here" if i == 7 else ""),
              "query": "SELECT 1", "hardness": ["easy", "hard"][i % 2]} for i in range(12)]
    return make_folder(tmp_path / "data", items, ["d"])


def run_eval(data: Path, out: Path, *extra: str) -> tuple[int, dict]:
    from agents.cli.main import main

    code = main(["eval", "--data", str(data), "--pipelines", "baseline", "--limit", "4",
                 "--sample", "stratified", "--out", str(out), "--no-cache", *extra])
    report = json.loads((out / "report.json").read_text()) if code == 0 else {}
    return code, report


def test_eval_draws_a_disjoint_second_sample_and_records_the_exclusion(eval_env, tmp_path,
                                                                         capsys):
    code, first = run_eval(eval_env, tmp_path / "first", "--seed", "1", "--exclude-quoted")
    assert code == 0
    first_ids = first["sample"]["question_ids"]
    assert 7 not in first_ids
    code, second = run_eval(eval_env, tmp_path / "second", "--seed", "2",
                            "--exclude-sample", "1:4", "--exclude-quoted")
    assert code == 0
    printed = capsys.readouterr().out
    assert "excluded: 5 questions: 1 quoted in a pipeline prompt (7); 4 of sample " \
           "stratified:1:4" in printed
    second_ids = second["sample"]["question_ids"]
    assert len(second_ids) == 4 and not set(first_ids) & set(second_ids)
    assert 7 not in second_ids
    excluded = second["sample"]["excluded"]
    assert excluded["samples"] == ["stratified:1:4"]
    assert excluded["question_ids"] == sorted(first_ids + [7])
    assert excluded["quoted"][0]["qid"] == 7
    assert second["settings"]["excluded from the sample"].startswith("5 questions")
    manifest = json.loads((tmp_path / "second" / "manifest.json").read_text())
    assert manifest["exclude_samples"] == ["stratified:1:4"] and manifest["exclude_quoted"]
    assert manifest["excluded_ids"] == sorted(first_ids + [7])


def test_a_resume_with_other_exclusions_is_refused(eval_env, tmp_path, capsys):
    out = tmp_path / "out"
    assert run_eval(eval_env, out, "--exclude-sample", "1:4")[0] == 0
    assert run_eval(eval_env, out, "--exclude-sample", "1:4")[0] == 0  # same settings resume
    assert run_eval(eval_env, out)[0] == 2
    assert "exclude_samples: ['stratified:1:4'] there, [] now" in capsys.readouterr().err
    # a folder written before exclusions existed meant none: only a run without them resumes
    old = tmp_path / "old"
    assert run_eval(eval_env, old)[0] == 0
    manifest = json.loads((old / "manifest.json").read_text())
    for key in ("exclude_samples", "exclude_quoted", "excluded_ids"):
        del manifest[key]
    (old / "manifest.json").write_text(json.dumps(manifest))
    assert run_eval(eval_env, old, "--exclude-quoted")[0] == 2
    assert "exclude_quoted: False there, True now" in capsys.readouterr().err
    assert run_eval(eval_env, old)[0] == 0


def test_a_bad_excluded_sample_is_a_usage_error(eval_env, tmp_path, capsys):
    assert run_eval(eval_env, tmp_path / "x", "--exclude-sample", "seven:4")[0] == 2
    assert "--exclude-sample" in capsys.readouterr().err


def test_each_invocation_into_a_folder_is_recorded_as_a_sitting(eval_env, tmp_path):
    """A run resumed into the same folder keeps the history of when, with which code and
    beside how much load each part ran; the report lists every sitting."""
    from agents.evaluation.sittings import code_version

    out = tmp_path / "out"
    assert run_eval(eval_env, out, "--limit", "2")[0] == 0
    code, report = run_eval(eval_env, out)              # the other 2 of a sample of 4
    assert code == 0
    first, second = report["sittings"]
    assert (first["results"], second["results"]) == (2, 2)
    assert first["ended_as"] == second["ended_as"] == "done"
    assert first["held_back"] == 0
    assert first["started"] <= first["ended"] <= second["started"] <= second["ended"]
    assert first["code"] == code_version()
    for key in ("load_start", "load_max", "load_end"):  # None where there is no load average
        assert first[key] is None or isinstance(first[key], float)
    markdown = (out / "report.md").read_text()
    assert "## Sittings" in markdown and markdown.count("| done |") == 2

    # a note written into the report by hand survives the report being written again
    report["notes"] = ["a test suite shared the CPU during the first sitting"]
    (out / "report.json").write_text(json.dumps(report))
    code, report = run_eval(eval_env, out)
    assert report["notes"] == ["a test suite shared the CPU during the first sitting"]
    assert len(report["sittings"]) == 3


@pytest.mark.parametrize("raised, code, ended_as", [
    (KeyboardInterrupt(), 130, "interrupted"),
    ("aborted", 1, "stopped"),
    (RuntimeError("disk gone"), 1, "failed")])
def test_a_sitting_that_ends_badly_says_how_and_the_report_keeps_up(
        eval_env, tmp_path, monkeypatch, capsys, raised, code, ended_as):
    """However an invocation ends, its sitting is recorded and the report is written from
    the results so far; an unexpected error still reaches the CLI as one line."""
    from agents.evaluation import command
    from agents.evaluation.harness import EvaluationAborted

    out = tmp_path / "out"
    assert run_eval(eval_env, out, "--limit", "2")[0] == 0
    if raised == "aborted":
        raised = EvaluationAborted("too many model failures")

    def stops(*args, **kwargs):
        raise raised
    monkeypatch.setattr(command, "run_evaluation", stops)
    assert run_eval(eval_env, out)[0] == code
    report = json.loads((out / "report.json").read_text())
    assert [s["ended_as"] for s in report["sittings"]] == ["done", ended_as]
    assert report["questions_evaluated"] == 2
    if ended_as == "failed":
        assert capsys.readouterr().err.strip() == "error: RuntimeError: disk gone"


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_the_code_version_names_the_commit_and_changed_engine_files(tmp_path):
    import subprocess

    from agents.evaluation.sittings import code_version

    repo = tmp_path / "repo"
    (repo / "agents").mkdir(parents=True)
    assert code_version(repo) is None                 # not a checkout of its own
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t",
           "-c", "commit.gpgsign=false", "-c", "core.hooksPath=/dev/null"]
    subprocess.run([*git, "init", "-q"], check=True)
    (repo / "agents" / "x.py").write_text("x = 1\n")
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "c"], check=True)
    clean = code_version(repo)
    assert clean and "+" not in clean
    (repo / "notes.txt").write_text("outside the engine")
    assert code_version(repo) == clean
    (repo / "agents" / "x.py").write_text("x = 2\n")
    assert code_version(repo) == clean + "+changes"
    assert code_version(repo / "agents") is None      # inside a checkout, not its top
