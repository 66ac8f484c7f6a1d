"""Where a pipeline wins or loses against ``baseline``: in its first SQL, or in the steps after it.

``python bench/first_drafts.py --data ../shared/data/spider --baseline RESULTS_DIR
RESULTS_DIR[:PIPELINE] ...`` (``--out FILE`` also writes the JSON) reads committed evaluation
folders and, for each one named (its only pipeline, or ``PIPELINE``), scores the first SQL each
run wrote -- MAC-SQL's Decomposer, DEA-SQL's few-shot generation, R³'s SQL-Writer, CSMA's first
agent: the SQL before any execution feedback, review or repair (for ``selection`` it is only its
first generator's candidate, which says little) -- against the gold query with the
evaluation's own scoring, re-executed read-only on ``DATA/database/<db_id>/<db_id>.sqlite``.
It prints, per folder:

- how often the first SQL is right and the final answer is right, and how many answers the later
  steps fixed and broke (the worth of the pipeline's feedback loops on these questions);
- both against ``--baseline``'s ``baseline`` answers on the same questions (right where
  ``baseline`` is wrong / wrong where it is right): whether a pipeline's gap to one prompt opens
  in its first SQL or after it.

The final answer is scored again too, in the same way, so both verdicts come from the same
scoring (each folder's own ``keep_distinct``); a question whose gold query fails is left out.
Only recorded runs are read, on their own databases (folders asked on a merged database are
refused); nothing is asserted: it is a measurement.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agents.evaluation.harness import DatabasePool, EvalOptions, score  # noqa: E402
from agents.evaluation.records import ResultsFile  # noqa: E402


def first_sql(record: dict) -> tuple[str | None, str | None]:
    """The first step of the recorded run that wrote SQL, and that SQL; (None, None) if none."""
    for event in (record.get("run") or {}).get("events", []):
        if (event.get("sql") or "").strip():
            return event.get("step"), event["sql"]
    return None, None


def read_answers(folder: str, pipeline: str | None) -> tuple[str, dict[int, dict]]:
    """One pipeline's records of an evaluation folder by question id; the folder must hold
    exactly one pipeline unless ``pipeline`` names it."""
    records = ResultsFile(Path(folder) / "results.jsonl").read()
    found = sorted({r["pipeline"] for r in records})
    if pipeline is None:
        if len(found) != 1:
            raise SystemExit(f"{folder} holds {', '.join(found)}: name one as {folder}:NAME")
        pipeline = found[0]
    elif pipeline not in found:
        raise SystemExit(f"{folder} has no {pipeline} runs (it has {', '.join(found)})")
    return pipeline, {r["question_id"]: r for r in records if r["pipeline"] == pipeline}


def options_of(folder: str) -> EvalOptions:
    """The scoring options the folder was evaluated with (its manifest), refusing a folder
    whose questions were asked on another database than their own."""
    manifest = Path(folder) / "manifest.json"
    recorded = json.loads(manifest.read_text()) if manifest.is_file() else {}
    if recorded.get("ask_db"):
        raise SystemExit(f"{folder} was asked on {recorded['ask_db']}: only folders asked on "
                         "each question's own database are read")
    return EvalOptions(keep_distinct=bool(recorded.get("keep_distinct", False)))


def measure(answers: dict[int, dict], baseline: dict[int, dict], data: Path,
            pool: DatabasePool, options: EvalOptions) -> dict:
    """First-SQL and final verdicts of ``answers`` on the questions ``baseline`` answered."""
    first_right, first_runs, final_right, base_right = set(), set(), set(), set()
    steps: dict[str, int] = {}
    common, gold_failed = [], 0
    for q in sorted(set(answers) & set(baseline)):
        record = answers[q]
        step, sql = first_sql(record)
        db = pool.get(str(data / "database" / record["db_id"] / f"{record['db_id']}.sqlite"))
        verdict = score(db, record["gold_sql"], sql, options)
        if verdict.get("gold_error"):
            gold_failed += 1
            continue
        common.append(q)
        steps[step or "(none)"] = steps.get(step or "(none)", 0) + 1
        if verdict["correct"]:
            first_right.add(q)
        if sql and not verdict.get("pred_error"):
            first_runs.add(q)
        if score(db, record["gold_sql"], record.get("pred_sql"), options)["correct"]:
            final_right.add(q)
        if baseline[q]["correct"]:
            base_right.add(q)
    return {
        "questions": len(common), "gold_failed": gold_failed, "first_sql_steps": steps,
        "baseline_correct": len(base_right),
        "first_sql_correct": len(first_right),
        "first_sql_does_not_run": len(common) - len(first_runs),
        "final_correct": len(final_right),
        "fixed_by_later_steps": len(final_right - first_right),
        "broken_by_later_steps": len(first_right - final_right),
        "first_sql_vs_baseline": {"right_where_baseline_wrong": len(first_right - base_right),
                                  "wrong_where_baseline_right": len(base_right - first_right)},
        "final_vs_baseline": {"right_where_baseline_wrong": len(final_right - base_right),
                              "wrong_where_baseline_right": len(base_right - final_right)},
    }


def markdown(rows: list[dict]) -> str:
    lines = ["| folder | pipeline | questions | `baseline` | first SQL right (does not run) "
             "| vs `baseline` + / - | later steps fixed / broke | final right | vs `baseline` "
             "+ / - |", "| --- " * 9 + "|"]
    for row in rows:
        f, g = row["first_sql_vs_baseline"], row["final_vs_baseline"]
        lines.append(
            f"| {row['folder']} | {row['pipeline']} | {row['questions']} | "
            f"{row['baseline_correct']} | {row['first_sql_correct']} "
            f"({row['first_sql_does_not_run']}) | +{f['right_where_baseline_wrong']} / "
            f"-{f['wrong_where_baseline_right']} | {row['fixed_by_later_steps']} / "
            f"{row['broken_by_later_steps']} | {row['final_correct']} | "
            f"+{g['right_where_baseline_wrong']} / -{g['wrong_where_baseline_right']} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="the Spider folder the runs were asked on")
    parser.add_argument("--baseline", required=True,
                        help="evaluation folder holding baseline's answers to the same questions")
    parser.add_argument("folders", nargs="+", metavar="RESULTS_DIR[:PIPELINE]")
    parser.add_argument("--out", default=None, help="also write the rows as JSON to this file")
    args = parser.parse_args(argv)
    _, baseline = read_answers(args.baseline, "baseline")
    pool = DatabasePool()
    rows = []
    for spec in args.folders:
        folder, _, name = spec.partition(":")
        pipeline, answers = read_answers(folder, name or None)
        row = measure(answers, baseline, Path(args.data), pool, options_of(folder))
        rows.append({"folder": Path(folder).name, "pipeline": pipeline, **row})
    print(markdown(rows))
    if args.out:
        Path(args.out).write_text(json.dumps({"baseline": args.baseline, "rows": rows},
                                             indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
