"""The Join check (``drop_unread_joins``) measured on recorded runs, without the model.

``python bench/join_endings.py --pipeline macsql --results bench/results/seed8-macsql-defaults
--data ../shared/data/spider --out bench/results/join-check-seed8-macsql.json``

The Join check is the last step of a run (:mod:`agents.pipelines.join_ending`): where the final
SQL runs and joins a table it reads nothing of that the question does not name, the run ends on
the SQL without that join when that version runs. Nothing before it changes, so it is replayed
exactly on each recorded final SQL with the pipeline's own function (``ending_for``) and the
new SQL is scored with the evaluation's own scoring (the gold query on the question's own
database, the prediction on the file the question was asked on).

``--resumed`` (repeatable, in the order they were measured) lays measurements made since over
the folder -- resumed runs and replays alike: a row with a final SQL (``sql_after``) replaces
the run's, so the replay starts from each pipeline's figure of today. The check reads the
database's whole schema; on a merged file a run's prompts saw only what schema retrieval kept,
which holds every table its SQL can name, so the tables and their columns are the same.
Nothing is asserted: it is a measurement.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agents.evaluation.harness import DatabasePool, EvalOptions, score  # noqa: E402
from agents.pipelines.join_ending import ending_for  # noqa: E402
from agents.step_context import ExecLimits  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))
from data_first import ask_path  # noqa: E402
from first_drafts import read_answers  # noqa: E402
from runnable_endings import ex_summary, ex_totals, write_report  # noqa: E402


def laid_over(paths: list[str]) -> dict[int, dict]:
    """Each question's latest measured final SQL and verdict over ``paths``, in order."""
    latest: dict[int, dict] = {}
    for path in paths:
        for row in json.loads(Path(path).read_text(encoding="utf-8"))["rows"]:
            if "sql_after" in row and row.get("resumed", True):
                latest[int(row["question_id"])] = {"sql": row["sql_after"],
                                                   "correct": bool(row["after"]),
                                                   "from": path}
    return latest


def measure(pipeline: str, folder: str, resumed: list[str], data: Path,
            asked_on: str | None) -> dict:
    _, answers = read_answers(folder, pipeline)
    pool, options, limits = DatabasePool(), EvalOptions(), ExecLimits()
    later = laid_over(resumed)
    rows = []
    for q, record in sorted(answers.items()):
        own = pool.get(str(data / "database" / record["db_id"] / f"{record['db_id']}.sqlite"))
        asked = pool.get(asked_on) if asked_on else own
        sql = later[q]["sql"] if q in later else record.get("pred_sql")
        before = score(own, record["gold_sql"], sql, options, pred_db=asked)
        row = {"question_id": q, "resumed_before": q in later, "before": bool(before["correct"]),
               "after": bool(before["correct"]), "sql_before": sql}
        rows.append(row)
        if before.get("gold_error"):
            continue
        found = ending_for(sql, asked.schema, record["question"], asked,
                           timeout=limits.timeout, max_rows=limits.max_rows)
        if found is not None:
            without, _ = found
            after = score(own, record["gold_sql"], without.sql, options, pred_db=asked)
            row.update(after=bool(after["correct"]), sql_after=without.sql,
                       tables=without.tables)
    return {"pipeline": pipeline, "results": folder, "resumed": resumed, "ask_db": asked_on,
            "questions": len(rows), **ex_totals(rows),
            "checked": sum(1 for r in rows if "sql_after" in r), "rows": rows}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pipeline", required=True,
                        choices=["macsql", "deasql", "r3", "csma", "selection"])
    parser.add_argument("--results", required=True, help="an evaluation folder")
    parser.add_argument("--resumed", action="append", default=[],
                        help="a measurement laid over the folder (repeatable, in order)")
    parser.add_argument("--data", required=True, help="the Spider folder")
    parser.add_argument("--ask-db", default=None,
                        help="the file the folder's questions were asked on, where its "
                             "manifest's ask_db path is not there")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    report = measure(args.pipeline, args.results, args.resumed, Path(args.data),
                     ask_path(args.results, args.ask_db))
    write_report(args.out, report)
    print(f"{ex_summary(args.pipeline, args.results, report)}, {report['checked']} final "
          f"SQL(s) without a join")
    return 0


if __name__ == "__main__":
    sys.exit(main())
