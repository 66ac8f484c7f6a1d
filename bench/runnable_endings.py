"""MAC-SQL's and DEA-SQL's runnable ending measured on recorded runs, without the model.

``python bench/runnable_endings.py --pipeline macsql --results
bench/results/seed7-macsql-graded --resumed bench/results/rewrite-seed7-macsql.json --data
../shared/data/spider --out bench/results/endings-seed7-macsql.json``

With ``name_rewrite`` (:mod:`agents.rules.runnable_ending`) a MAC-SQL run whose Refiner
loop ends on SQL failing on a column name, or a DEA-SQL run whose execution check does, ends on
the version one clear change makes run. That is the run's last act: no model call follows it.
So applying it to the SQL each recorded run ended on is what running the pipeline again would
do (temperature 0, the same SQL before it), and this script does exactly that, with the
pipeline's own query limits, then scores the SQL before and after with the evaluation's own
scoring (each folder's ``keep_distinct``) on the question's own database. The rewrite is built
from the whole database's schema, which is the run's schema wherever retrieval kept it whole
(every Spider database, asked on its own); on a folder asked on a merged database it would not
be exact, so such folders are refused (as by ``bench/first_drafts.py``). ``--resumed`` lays a
measurement of runs resumed since over the folder (their ``sql_after`` and resumed steps), so
the figure is measured on top of the defaults that measurement added. A run is changed only if
its last step is the ending step (``refiner``, ``execution_check``) and its SQL fails there.

R³'s ending is not its last act (the reviews follow it), so R³ is measured by resuming runs
instead: ``bench/name_error_repairs.py --pipeline r3 ... --param name_rewrite=true``. Nothing is
asserted: it is a measurement.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agents.evaluation.harness import DatabasePool, score  # noqa: E402
from agents.rules.name_rewrite import rewrite_or_none, take_rewrite
from agents.core.step_context import ExecLimits

sys.path.insert(0, str(ROOT / "bench"))
from first_drafts import options_of, read_answers  # noqa: E402

ENDING_STEPS = {"macsql": "refiner", "deasql": "execution_check"}


def latest_runs(answers: dict[int, dict], resumed: str | None) -> dict[int, dict]:
    """Each question's last step and final SQL: the recorded run's, or the resumed one's."""
    runs = {}
    for q, record in answers.items():
        events = (record.get("run") or {}).get("events") or []
        runs[q] = {"sql": record.get("pred_sql"),
                   "last_step": events[-1]["step"] if events else None, "resumed": False}
    if resumed:
        for row in json.loads(Path(resumed).read_text(encoding="utf-8"))["rows"]:
            if row.get("resumed") and int(row["question_id"]) in runs:
                steps = row.get("steps") or []
                runs[int(row["question_id"])] = {"sql": row.get("sql_after"),
                                                 "last_step": steps[-1] if steps else None,
                                                 "resumed": True}
    return runs


def ending(db, sql: str | None, limits: ExecLimits):
    """``(sql, written)``: the SQL the run ends on with the ending, and what it replaced."""
    if not sql:
        return sql, None
    run = lambda text: db.execute(text, timeout=limits.timeout, max_rows=limits.max_rows)  # noqa: E731
    result = run(sql)
    if result.ok:
        return sql, None
    new_sql, _, written = take_rewrite(
        rewrite_or_none(db, result.error, sql, db.schema, timeout=limits.timeout), result, run)
    return new_sql, written


def measure(pipeline: str, folder: str, resumed: str | None, data: Path) -> dict:
    _, answers = read_answers(folder, pipeline)
    options, pool, limits = options_of(folder), DatabasePool(), ExecLimits()
    step = ENDING_STEPS[pipeline]
    rows = []
    for q, run in sorted(latest_runs(answers, resumed).items()):
        record = answers[q]
        db = pool.get(str(data / "database" / record["db_id"] / f"{record['db_id']}.sqlite"))
        before = score(db, record["gold_sql"], run["sql"], options)
        if before.get("gold_error"):
            continue
        new_sql, written = (ending(db, run["sql"], limits) if run["last_step"] == step
                            else (run["sql"], None))
        after = score(db, record["gold_sql"], new_sql, options) if written else before
        rows.append({"question_id": q, "hardness": record["hardness"],
                     "resumed_before": run["resumed"], "before": bool(before["correct"]),
                     "after": bool(after["correct"]),
                     "runs_before": not before.get("pred_error") and bool(run["sql"]),
                     "runs_after": not after.get("pred_error") and bool(new_sql),
                     "sql_before": run["sql"], **({"sql_after": new_sql, **written}
                                                  if written else {})})
    return {"pipeline": pipeline, "results": folder, "resumed": resumed,
            "questions": len(rows), **ex_totals(rows),
            "endings": sum(1 for r in rows if "rewrite" in r),
            "not_running_before": sum(not r["runs_before"] for r in rows),
            "not_running_after": sum(not r["runs_after"] for r in rows), "rows": rows}


def replay_arguments(parser: argparse.ArgumentParser,
                     results_help: str = "evaluation folder with results.jsonl") -> None:
    """The options of a replay on recorded runs: the folder, the resumed runs laid over it,
    the Spider folder and the report's path (this script's and ``bench/aggregate_gate.py``'s)."""
    parser.add_argument("--results", required=True, help=results_help)
    parser.add_argument("--resumed", default=None,
                        help="a resumed-runs measurement JSON whose final SQL replaces the "
                             "folder's for the runs it resumed")
    parser.add_argument("--data", required=True, help="the Spider folder the runs were asked on")
    parser.add_argument("--out", required=True)


def ex_totals(rows: list[dict]) -> dict:
    """A replay's verdicts in all: EX before and after, and the questions fixed and broken."""
    return {"ex_before": sum(r["before"] for r in rows), "ex_after": sum(r["after"] for r in rows),
            "fixed": [r["question_id"] for r in rows if r["after"] and not r["before"]],
            "broken": [r["question_id"] for r in rows if r["before"] and not r["after"]]}


def ex_summary(name: str, folder: str, report: dict) -> str:
    """The first words of a replay's printed line: pipeline, folder, questions, EX change."""
    return (f"{name} {Path(folder).name}: {report['questions']} questions, EX "
            f"{report['ex_before']} -> {report['ex_after']} (+{len(report['fixed'])} / "
            f"-{len(report['broken'])})")


def write_report(out: str, report: dict) -> None:
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pipeline", required=True, choices=sorted(ENDING_STEPS))
    replay_arguments(parser)
    args = parser.parse_args(argv)
    report = measure(args.pipeline, args.results, args.resumed, Path(args.data))
    write_report(args.out, report)
    print(f"{ex_summary(args.pipeline, args.results, report)}, {report['endings']} "
          f"ending(s) rewritten, SQL that does "
          f"not run {report['not_running_before']} -> {report['not_running_after']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
