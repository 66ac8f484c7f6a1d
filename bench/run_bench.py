"""The benchmarks of ``bench/``: what each measures, what it needs, and a run of the cheap ones.

``make bench`` runs ``python bench/run_bench.py``: it lists every benchmark with its command,
what it needs and roughly how long it takes, then runs the ones that call no model (seconds
each) and prints their output. The model-bound ones take minutes to hours on a CPU and are only
run when named, so nobody starts hours of model time by accident:

    python bench/run_bench.py               # list, then run the cheap ones
    python bench/run_bench.py --list        # list only
    python bench/run_bench.py cold-start    # run one benchmark by name, however long it takes

The Spider dataset is looked up in ``$SPIDER_DIR``, else ``../shared/data/spider`` beside the
repository. Results: ``bench/README.md``; how each was measured, by date: ``bench/CHANGELOG.md``.
The one-off replays of a single rule live in ``bench/archive/`` (``bench/archive/README.md``) and
are listed here with the rest, by their path there.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
SPIDER = Path(os.environ.get("SPIDER_DIR") or ROOT.parent / "shared" / "data" / "spider")
RESULTS = ROOT / "bench" / "results" / "spider-dev-stratified-seed7"


def _spider_ready() -> str | None:
    if not (SPIDER / "dev.json").is_file() or not (SPIDER / "database").is_dir():
        return f"the Spider dataset is not at {SPIDER} (set SPIDER_DIR)"
    return None


def _files_committed(*names: str):
    """A readiness check: the committed result files ``names``, no dataset."""
    def ready() -> str | None:
        missing = [n for n in names if not (RESULTS.parent / n).is_file()]
        return f"no committed results at bench/results/{missing[0]}" if missing else None
    return ready


def _committed(*names: str):
    """A readiness check: the committed result files ``names`` and the Spider dataset."""
    files = _files_committed(*names)
    return lambda: files() or _spider_ready()


_endings_ready = _committed("seed8-deasql-compact/results.jsonl", "rewrite-seed8-deasql.json")
_aggregate_gate_ready = _committed("seed7-r3-small/results.jsonl", "rewrite-seed7-r3.json")
_unread_joins_ready = _committed("seed7-csma-agreement/results.jsonl",
                                 "rewrites-seed7-csma.json")
_distractors_selection_ready = _committed("distractors-seed7-selection/results.jsonl",
                                          "valuecap-distractors-seed7-selection.json")


_PROMPT_REUSE = ("seed7-baseline-same-day", "merged-seed7-valuecap", "distractors-seed7-parts")


def _data_first_ready() -> str | None:
    if not (ROOT / "bench/merged/spider_dev_distractors.sqlite").is_file():
        return "bench/merged/ is not built (the merge-spider benchmark builds it)"
    return _distractors_selection_ready()


def _results_ready() -> str | None:
    if not (RESULTS / "results.jsonl").is_file():
        return f"no committed evaluation results at {RESULTS.relative_to(ROOT)}"
    return _spider_ready()


def _model_ready() -> str | None:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from agents.llm.local_model import weights_installed

    return None if weights_installed("1.5b") else "the embedded model is not installed (make model)"


def _browser_ready() -> str | None:
    if not Path("/usr/bin/chromium").is_file():
        return "Debian's chromium is not installed"
    return _model_ready()


def _model_and_spider_ready() -> str | None:
    return _spider_ready() or _model_ready()


@dataclass(frozen=True)
class Benchmark:
    name: str
    command: list[str]  # after the Python interpreter
    measures: str
    needs: str
    cost: str
    cheap: bool  # calls no model: run by default
    missing: Callable[[], str | None]  # why it cannot run here, or None


def _replay(name: str, script: str, folder: str, resumed: str, out: str, what: str,
            ready, *options: str) -> Benchmark:
    """A cheap replay on recorded runs: ``folder`` with the resumed runs of ``resumed`` laid
    over it, the report written to ``bench/runs/<out>``."""
    return Benchmark(name, [script, *options, "--results", str(RESULTS.parent / folder),
                            "--resumed", str(RESULTS.parent / resumed), "--data", str(SPIDER),
                            "--out", f"bench/runs/{out}"],
                     what, "the committed results and the Spider databases", "a few seconds",
                     True, ready)


BENCHMARKS = [
    Benchmark("scoring-speed", ["bench/scoring_speed.py", str(SPIDER)],
              "harness seconds per question with no model (gold SQL as the answer)",
              "the Spider dataset", "about 15 s", True, _spider_ready),
    Benchmark("agreement", ["bench/agreement.py", str(RESULTS), str(SPIDER)],
              "which questions each pipeline gets right, against baseline and R3's first draft",
              "the committed results and the Spider databases", "a few seconds", True,
              _results_ready),
    Benchmark("first-drafts", ["bench/first_drafts.py", "--data", str(SPIDER), "--baseline",
                               str(RESULTS), *(str(RESULTS.parent / f) for f in (
                                   "seed7-macsql-graded", "seed7-deasql-compact",
                                   "seed7-r3-small", "seed7-csma-compact"))],
              "each pipeline's first SQL and final answer against baseline's: where the gap "
              "to one prompt opens", "the committed results and the Spider databases",
              "a few seconds", True, _results_ready),
    _replay("runnable-endings", "bench/runnable_endings.py", "seed8-deasql-compact",
            "rewrite-seed8-deasql.json", "endings-seed8-deasql.json",
            "DEA-SQL's recorded final SQL that fails on a column name replaced by the version "
            "one clear change makes run (the run's last act, so no model): EX before and after",
            _endings_ready, "--pipeline", "deasql"),
    _replay("aggregate-gate", "bench/aggregate_gate.py", "seed7-r3-small",
            "rewrite-seed7-r3.json", "aggregate-gate-seed7-r3.json",
            "R³'s recorded revisions that newly take columns from an arbitrary row refused, "
            "the SQL before each final (the run's last act, so no model): EX before and after",
            _aggregate_gate_ready),
    _replay("csma-unread-joins", "bench/archive/csma_unread_joins.py", "seed7-csma-agreement",
            "rewrites-seed7-csma.json", "unread-joins-seed7-csma.json",
            "CSMA's recorded agreement checks whose own SQL differs only by a join it reads "
            "nothing of counted as agreement (a positive check ends the run, so no model): EX "
            "before and after", _unread_joins_ready),
    _replay("data-first", "bench/vote_rules.py", "distractors-seed7-selection",
            "valuecap-distractors-seed7-selection.json", "data-first-distractors-seed7.json",
            "the selection vote on recorded runs with results holding no data set aside "
            "(the vote replayed; the open votes it changes listed for --judged): EX before and "
            "after", _data_first_ready, "--ask-db", "bench/merged/spider_dev_distractors.sqlite"),
    Benchmark("final-checks", ["bench/final_checks.py", "--pipeline", "r3", "--results",
                               str(RESULTS.parent / "seed8-r3-small"), "--resumed",
                               str(RESULTS.parent / "endings-seed8-r3.json"), "--data",
                               str(SPIDER), "--out", "bench/runs/final-check-seed8-r3.json"],
              "the Final check on recorded final SQL (a run's last step, so no model): EX "
              "before and after", "the committed results and the Spider databases",
              "a few seconds", True, _committed("seed8-r3-small/results.jsonl",
                                                 "endings-seed8-r3.json")),
    Benchmark("example-bank-speed", ["bench/example_bank_speed.py"],
              "building and searching a few-shot example bank of 10,000 examples",
              "nothing", "a few seconds", True, lambda: None),
    Benchmark("merge-spider", ["bench/merge_spider.py", "--data", str(SPIDER)],
              "builds Spider's dev databases merged into one file, and with the training "
              "schemas as empty distractor tables (bench/merged/); times their introspection",
              "the Spider dataset", "about 20 s", True, _spider_ready),
    Benchmark("renamed-spider", ["bench/renamed_spider.py", "--data", str(SPIDER)],
              "builds Spider's dev databases with renamed schemas and the unread questions "
              "with rewritten gold SQL, checked to return the original's rows "
              "(bench/runs/spider-renamed/)", "the Spider dataset", "a few seconds", True,
              _spider_ready),
    Benchmark("unseen-sets", ["bench/unseen_sets.py"],
              "builds the question sets on databases outside Spider (bench/unseen/) and checks "
              "every gold query: it runs, finds data, and no tie decides its order",
              "nothing", "a few seconds", True, lambda: None),
    Benchmark("unseen-report", ["bench/unseen_report.py",
                                "--set", "freight_ops=bench/results/unseen-fresh-freight-ops-"
                                "unread:bench/runs/unseen/freight_ops/unread.json",
                                "--set", "people_ops=bench/results/unseen-fresh-people-ops-"
                                "unread:bench/runs/unseen/people_ops/unread.json",
                                "--set", "people_ops=bench/results/unseen-people-ops:"
                                "bench/runs/unseen/people_ops/unread.json",
                                "--set", "renamed_spider=bench/results/renamed-spider-unread:",
                                "--set", "renamed_spider=bench/results/renamed-spider-unread-"
                                "seeded:",
                                "--set", "renamed_spider=bench/results/renamed-spider-unread-"
                                "fresh:",
                                "--set", "renamed_spider=bench/results/renamed-spider-unread-"
                                "fresh-deasql:",
                                "--set", "renamed_spider=bench/results/renamed-spider-unread-"
                                "fresh-r3:",
                                "--set", "renamed_spider=bench/results/renamed-spider-unread-"
                                "fresh-writer:",
                                "--set", "freight_ops=bench/results/unseen-fresh-writer-freight-"
                                "ops-unread:bench/runs/unseen/freight_ops/unread.json",
                                "--set", "people_ops=bench/results/unseen-fresh-writer-people-"
                                "ops-unread:bench/runs/unseen/people_ops/unread.json",
                                "--out", "bench/runs/unseen.json"],
              "the unseen-schema sets' figures per pipeline, unread and read halves apart, from "
              "the committed evaluations (bench/results/unseen.json)",
              "the sets built (the unseen-sets benchmark)", "a second", True,
              lambda: None if (ROOT / "bench/runs/unseen/people_ops/unread.json").is_file()
              else "bench/runs/unseen/ is not built (the unseen-sets benchmark builds it)"),
    Benchmark("answer-review", ["bench/answer_review.py", "bench/results/fresh-seed11",
                                "bench/results/renamed-spider-unread",
                                "bench/results/unseen-people-ops",
                                "--out", "bench/runs/answer-review.json"],
              "without the model: how often the answer's review (shape doubt, refusal, empty "
              "result explained) falls on wrong and on right recorded answers, and on gold",
              "Spider's databases and the unseen-schema sets built", "a minute", True,
              lambda: None if (ROOT / "bench/runs/spider-renamed/dev.json").is_file()
              else "bench/runs/spider-renamed is not built (python bench/renamed_spider.py)"),
    Benchmark("answerability", ["bench/answerability.py", "--out",
                                "bench/runs/answerability.json"],
              "the answerability check on Spider dev, renamed Spider dev and the written "
              "unanswerable questions: wrong refusals and refusals",
              "the embedded model (make model) and bench/runs/spider-renamed", "a few minutes",
              False, _model_ready),
    Benchmark("hostile-inputs", ["bench/hostile_inputs.py", "run"],
              "generated hostile statements and files against the hard limits: refused, ran, "
              "slowest against the limit, peak memory",
              "nothing beyond the sample databases", "about 10 minutes", False,
              lambda: None),
    Benchmark("cold-start", ["bench/cold_start.py", "macsql"],
              "process start to the first agent event, embedded model",
              "the embedded model (make model)", "about 2 minutes", False, _model_ready),
    Benchmark("unread-pool", ["bench/unread_pool.py", "--data", str(SPIDER), "--out",
                              "bench/runs/unread-pool"],
              "without the model: Spider dev without every question a committed evaluation "
              "holds, the pool new unread samples are drawn from",
              "the Spider dataset", "a few seconds", True, _spider_ready),
    Benchmark("progressive-report", [
        "bench/progressive_report.py",
        *(f"--sample=seed {n}={RESULTS.parent}/progressive-seed{n}-selection" for n in (12, 13)),
        "--macsql", f"{RESULTS.parent}/progressive-seed12-macsql",
        "--cold", f"{RESULTS.parent}/cold-start-selection.json",
        *(f"--cold-warm={RESULTS.parent}/cold-start-{n}-warm.json"
          for n in ("selection", "macsql", "macsql-freight")),
        "--out", "bench/runs/progressive.json"],
              "without the model: the speed-ups' figures (draft and final answer, with and "
              "without them) from the committed evaluations, as in results/progressive.json",
              "the committed results", "a second", True,
              _files_committed(*(f"progressive-seed{n}-selection{o}/report.json"
                                 for n in (12, 13) for o in ("", "-off")))),
    Benchmark("cold-start-warm", ["bench/cold_start.py", "macsql", "--warm"],
              "the same, the prompt prefix read first as the Ask page does while the question "
              "is typed: the wait from the question to the answer",
              "the embedded model (make model)", "about 2 minutes", False, _model_ready),
    Benchmark("browser-latency", ["bench/browser_latency.py", "--repeat", "5"],
              "page load and click-to-first-step in headless Chromium, embedded model",
              "the embedded model and Debian's chromium", "about 5 minutes", False,
              _browser_ready),
    Benchmark("retrieval-recall", ["bench/retrieval_recall.py", "--db",
                                   "bench/merged/spider_dev_distractors.sqlite", "--data",
                                   str(SPIDER), "--seed", "7"],
              "without the model: questions whose every needed table schema retrieval keeps, "
              "and the schema tokens kept, per relative floor (run merge-spider first)",
              "the Spider dataset and bench/merged/", "about 30 s", True, _spider_ready),
    Benchmark("gold-parts", ["bench/gold_parts.py", "--data", str(SPIDER), "--out",
                             "bench/results/gold-parts.json"],
              "without the model: how many gold queries read tables of two parts of their own "
              "database that no foreign key connects (what selection's unrelated_parts rests on)",
              "the Spider dataset", "a few seconds", True, _spider_ready),
    Benchmark("prompt-reuse", ["bench/prompt_reuse.py", "--orders",
                               *(str(RESULTS.parent / f) for f in _PROMPT_REUSE)],
              "without the model: how much of each recorded prompt the server had already read "
              "in the one before (own databases against the merged files), and what chunk "
              "reuse or another order of the kept tables would change",
              "the committed results (bench/merged/ for --orders)", "a few seconds", True,
              _files_committed(*(f"{f}/results.jsonl" for f in _PROMPT_REUSE))),
    Benchmark("prompt-replay", ["bench/prompt_reuse.py", "--replay", "40",
                                *(str(RESULTS.parent / f) for f in _PROMPT_REUSE)],
              "the same recorded prompts sent again, back to back, to the embedded server: "
              "the tokens it read, its milliseconds per token read and written, and the "
              "seconds beside those recorded (folders recorded on other days, at one speed)",
              "the embedded model and the committed results", "about 20 minutes", False,
              lambda: _model_ready() or _files_committed(
                  *(f"{f}/results.jsonl" for f in _PROMPT_REUSE))()),
    Benchmark("decoding", ["bench/decoding.py", "--questions", "6"],
              "the embedded server's decoding modes on the same recorded requests: completion "
              "tokens/s, seconds, answers identical to standard decoding",
              "the embedded model (and make fast-model for draft)", "about 20 minutes", False,
              _model_ready),
    Benchmark("reselect", ["bench/reselect.py", "--results", "bench/results/seed7-selection",
                           "--data", str(SPIDER), "--param", "select_orders=4", "--out",
                           "bench/runs/reselect-seed7.json"],
              "the selection pipeline's vote and selection agent again on recorded "
              "candidates (resumed from the vote): EX before and after, questions changed",
              "the embedded model and the Spider dataset", "about 20 minutes", False,
              _model_and_spider_ready),
    Benchmark("data-first-judged", ["bench/vote_rules.py", "--judged", "--results",
                                    "bench/results/seed7-selection-fresh", "--data",
                                    str(SPIDER), "--param", "data_first=true", "--out",
                                    "bench/runs/data-first-judged-seed7.json"],
              "the selection agent on the recorded runs whose vote, with results holding no "
              "data set aside, leaves other candidates open (resumed from the vote)",
              "the embedded model and the Spider dataset", "about 2 minutes", False,
              _model_and_spider_ready),
    Benchmark("retry-repeats", ["bench/archive/retry_repeats.py", "--pipeline", "r3", "--results",
                                "bench/results/seed7-r3-small", "--data", str(SPIDER),
                                "--param", "repeat_temperature=0.7", "--out",
                                "bench/runs/retry-seed7-r3.json"],
              "recorded runs whose repair repeated a failing SQL, resumed from that repair "
              "with repeat_temperature set: EX before and after, questions changed",
              "the embedded model and the Spider dataset", "about 10 minutes", False,
              _model_and_spider_ready),
    Benchmark("name-error-repairs", ["bench/name_error_repairs.py", "--pipeline", "macsql",
                                     "--results", "bench/results/spider-dev-stratified-seed7",
                                     "--data", str(SPIDER), "--param", "refiner_prompt=tables",
                                     "--out", "bench/runs/name-errors-seed7-macsql.json"],
              "recorded runs resumed at their first repair of a name error with another "
              "repair prompt: EX before and after, questions changed",
              "the embedded model and the Spider dataset", "about 10 minutes", False,
              _model_and_spider_ready),
    Benchmark("fresh-writer", ["bench/fresh_writer.py", "--pipeline", "deasql", "--results",
                               "bench/results/fresh-seed11-deasql", "--data", str(SPIDER),
                               "--param", "fresh_writer=true", "--out",
                               "bench/runs/fresh-writer-seed11-deasql.json"],
              "recorded runs that ended on SQL that fails, resumed at their ending with the "
              "writer afresh: EX before and after, questions changed",
              "the embedded model and the Spider dataset", "about 3 minutes", False,
              _model_and_spider_ready),
    Benchmark("failed-checks", ["bench/archive/failed_checks.py", "--results",
                                "bench/results/seed7-deasql-compact", "--data", str(SPIDER),
                                "--param", "repair_attempts=2", "--out",
                                "bench/runs/checks-seed7-deasql-compact.json"],
              "recorded DEA-SQL runs whose execution check gave up, resumed there with more "
              "repair attempts: EX before and after, questions changed",
              "the embedded model and the Spider dataset", "about 5 minutes", False,
              _model_and_spider_ready),
    Benchmark("recandidate", ["bench/recandidate.py", "--candidate", "decomposer", "--results",
                              "bench/results/seed7-selection", "--data", str(SPIDER), "--param",
                              "decomposer_prompt=graded", "--param",
                              "generators=cot,writer,decomposer", "--out",
                              "bench/runs/recandidate-seed7-decomposer-graded.json"],
              "recorded selection runs with one candidate written again under other "
              "parameters, then voted on again: EX before and after, questions changed",
              "the embedded model and the Spider dataset", "about an hour", False,
              _model_and_spider_ready),
    Benchmark("second-repairs", ["bench/archive/second_repairs.py", "--results",
                                 "bench/results/seed7-selection-fresh", "--data", str(SPIDER),
                                 "--param", "repair_attempts=2", "--out",
                                 "bench/runs/repairs2-seed7.json"],
              "recorded selection runs whose candidate's repair failed on another error, "
              "resumed there with a second repair allowed: EX before and after, questions "
              "changed", "the embedded model and the Spider dataset", "about 15 minutes", False,
              _model_and_spider_ready),
    Benchmark("csma-checks", ["bench/archive/csma_checks.py", "--results",
                              "bench/results/seed7-csma-compact", "--data", str(SPIDER),
                              "--param", "check_method=agreement", "--out",
                              "bench/runs/checks-seed7-csma.json"],
              "recorded CSMA runs resumed at their first check of SQL that runs, with another "
              "check method: EX before and after, questions changed",
              "the embedded model and the Spider dataset", "about 45 minutes", False,
              _model_and_spider_ready),
    Benchmark("csma-rewrites", ["bench/csma_rewrites.py", "--results",
                                "bench/results/seed8-csma-agreement", "--data", str(SPIDER),
                                "--param", "name_rewrite=true", "--out",
                                "bench/runs/rewrites-seed8-csma.json"],
              "recorded CSMA runs resumed where an agent's SQL failed on a column name that one "
              "clear change makes run, with that version taken: EX before and after, "
              "questions changed", "the embedded model and the Spider dataset",
              "about 10 minutes", False, _model_and_spider_ready),
    Benchmark("csma-failing-rounds", ["bench/archive/csma_failing_rounds.py", "--results",
                                      "bench/results/seed7-csma-agreement", "--data",
                                      str(SPIDER),
                                      # the folder predates these defaults: the resumed steps
                                      # run with every one of them, as measured
                                      *[arg for name in (
                                          "name_rewrite", "ignore_unread_joins",
                                          "drop_unread_joins", "drop_unread_from_table",
                                          "read_through_join_keys", "drop_unrelated_part_joins",
                                          "match_stored_case")
                                        for arg in ("--param", f"{name}=true")],
                                      "--param", "rounds_while_failing=2", "--out",
                                      "bench/runs/failing-rounds-seed7-csma.json"],
              "recorded CSMA runs that stopped at max_rounds on SQL that fails, resumed with "
              "rounds past it: EX before and after, rounds added", "the embedded model and "
              "the Spider dataset", "about 10 minutes", False, _model_and_spider_ready),
    Benchmark("csma-global-writer", ["bench/archive/csma_global_writer.py", "--results",
                                     "bench/results/seed8-csma-fresh", "--data", str(SPIDER),
                                     "--param", "global_writer=true", "--out",
                                     "bench/runs/global-writer-repair-seed8-csma.json"],
              "recorded CSMA runs that stopped at max_rounds on SQL that fails, resumed after "
              "their last round with the global writer: EX before and after, whether its SQL "
              "was taken", "the embedded model and the Spider dataset", "about 5 minutes",
              False, _model_and_spider_ready),
    Benchmark("csma-global-check", ["bench/archive/csma_global_writer.py", "--unchecked-too",
                                    "--results", "bench/results/seed8-csma-fresh", "--data",
                                    str(SPIDER), "--param", "global_writer=false", "--param",
                                    "global_check=true", "--out",
                                    "bench/runs/global-check-seed8-csma.json"],
              "recorded CSMA runs that stopped at max_rounds on SQL that runs, unchecked, "
              "resumed after their last round with the global writer's check: EX before and "
              "after, which SQL the writer agreed with", "the embedded model and the Spider "
              "dataset", "about 10 minutes", False, _model_and_spider_ready),
    Benchmark("csma-data-first", ["bench/archive/csma_data_first.py", "--results",
                                  str(RESULTS.parent / "seed8-csma-fresh"), "--resumed",
                                  str(RESULTS.parent / "global-check-seed8-csma.json"),
                                  "--resumed",
                                  str(RESULTS.parent / "global-writer-repair-seed8-csma.json"),
                                  "--data", str(SPIDER), "--out",
                                  "bench/runs/data-first-seed8-csma.json"],
              "CSMA's global check with a result without data weighing less "
              "(global_data_first), replayed on the recorded checks (no model): EX before and "
              "after", "the committed results and the Spider databases", "a few seconds", True,
              _committed("seed8-csma-fresh/results.jsonl", "global-check-seed8-csma.json",
                         "global-writer-repair-seed8-csma.json")),
    Benchmark("csma-outer-columns", ["bench/archive/csma_outer_columns.py", "--results",
                                     "bench/results/seed7-csma-agreement", "--data",
                                     str(SPIDER), "--with-rewrites", "--param",
                                     "name_rewrite=true", "--param", "outer_column_check=true",
                                     "--out", "bench/runs/outer-columns-seed7-csma.json"],
              "recorded CSMA runs resumed at their first check of SQL whose subquery selects "
              "an outer query's column, with that SQL checked as SQL that fails: EX before "
              "and after, questions changed", "the embedded model and the Spider dataset",
              "about 10 minutes", False, _model_and_spider_ready),
    Benchmark("macsql-selector", ["bench/archive/macsql_selector.py", "--results",
                                  "bench/results/seed8-macsql-fresh", "--data", str(SPIDER),
                                  "--param", "use_selector=never", "--out",
                                  "bench/runs/selector-seed8-macsql.json"],
              "recorded MAC-SQL runs whose Selector pruned the schema, resumed at the Selector "
              "with it off: EX before and after, questions changed, calls and seconds",
              "the embedded model and the Spider dataset", "about 10 minutes", False,
              _model_and_spider_ready),
    Benchmark("value-grounding-runs", ["bench/archive/value_grounding_runs.py", "--pipeline", "macsql",
                                       "--results", "bench/results/seed8-macsql-fresh",
                                       "--data", str(SPIDER), "--param",
                                       "value_grounding=examples", "--param",
                                       "use_selector=context", "--out",
                                       "bench/runs/grounding-examples-seed8-macsql.json"],
              "recorded MAC-SQL runs whose question has a stored-value match, run again with "
              "value grounding: EX before and after, questions changed",
              "the embedded model and the Spider dataset", "about 30 minutes", False,
              _model_and_spider_ready),
    Benchmark("retrieval-reruns", ["bench/retrieval_reruns.py", "--results",
                                   "bench/results/merged-seed7-selection", "--data", str(SPIDER),
                                   "--ask-db", "bench/merged/spider_dev_merged.sqlite", "--out",
                                   "bench/runs/valuecap-merged-seed7-selection.json"],
              "recorded runs asked on the merged dev file run again from schema retrieval "
              "where it now finds other stored values for the question: EX before and after",
              "the embedded model, the Spider dataset and bench/merged/", "about 30 minutes",
              False, _model_and_spider_ready),
    Benchmark("browser-streaming", ["bench/browser_streaming.py"],
              "first streamed characters on screen after the model's first token, and 3 "
              "browser sessions x 2 questions sharing the embedded model",
              "the embedded model and Debian's chromium", "about 10 minutes", False,
              _browser_ready),
    Benchmark("spider-eval", ["-m", "agents", "eval", "--data", str(SPIDER), "--pipelines",
                              "baseline", "--limit", "100", "--sample", "stratified", "--seed",
                              "7", "--examples", str(SPIDER / "train.json"), "--provider",
                              "local", "--no-cache", "--out", "bench/runs/spider-dev-seed7"],
              "execution accuracy and seconds per question on 100 Spider dev questions "
              "(name other pipelines with --pipelines)",
              "the embedded model and the Spider dataset",
              "about 10 minutes for baseline, hours for the multi-agent pipelines", False,
              _model_and_spider_ready),
]


def describe(bench: Benchmark) -> str:
    missing = bench.missing()
    state = f"cannot run here: {missing}" if missing else "ready"
    kind = "cheap, run by default" if bench.cheap else "calls the model, run by name only"
    return (f"{bench.name}  ({kind}; {bench.cost})\n"
            f"    measures: {bench.measures}\n"
            f"    needs:    {bench.needs} -- {state}\n"
            f"    command:  python {' '.join(bench.command)}")


def run(bench: Benchmark) -> int:
    """Run one benchmark in its own process from the repository root; its exit code."""
    missing = bench.missing()
    if missing:
        print(f"== {bench.name}: skipped, {missing}", flush=True)
        return 0
    print(f"== {bench.name}: python {' '.join(bench.command)}", flush=True)
    return subprocess.call([sys.executable, *bench.command], cwd=ROOT)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="List the benchmarks and run the cheap ones, or run one by name.")
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help=f"benchmarks to run: {', '.join(b.name for b in BENCHMARKS)}")
    parser.add_argument("--list", action="store_true", help="only list the benchmarks")
    args = parser.parse_args(argv)
    by_name = {b.name: b for b in BENCHMARKS}
    unknown = [n for n in args.names if n not in by_name]
    if unknown:
        parser.error(f"unknown benchmark {', '.join(unknown)}; "
                     f"choose from {', '.join(by_name)}")
    if not args.names:
        print("Benchmarks (bench/README.md has the results and how they were measured):\n")
        print("\n\n".join(describe(b) for b in BENCHMARKS))
        print()
        if args.list:
            return 0
    chosen = [by_name[n] for n in args.names] or [b for b in BENCHMARKS if b.cheap]
    failed = [b.name for b in chosen if run(b) != 0]
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
