"""The Final check measured on recorded runs, without the model.

``python bench/final_checks.py --pipeline macsql --results bench/results/seed8-macsql-defaults
--data ../shared/data/spider --out bench/results/final-check-seed8-macsql.json``

The Final check is the last step of a run (:mod:`agents.rules.final_check`): where the final
SQL runs and a join nothing reads can be left out (``drop_unread_joins``) or a compared string
written as the column stores it (``match_stored_case``), the run ends on that version when it
runs. Nothing before it changes, so it is replayed exactly on each recorded final SQL with the
pipeline's own function (``ending_for``) and the new SQL is scored with the evaluation's own
scoring (the gold query on the question's own database, the prediction on the file the
question was asked on). ``--rules`` names the rules replayed, by default all five as the
pipelines run them (``joins,from,keys,parts,case``: ``drop_unread_joins``, its three
widenings ``drop_unread_from_table``, ``read_through_join_keys`` and
``drop_unrelated_part_joins``, ``match_stored_case``); ``--rules joins,case`` is the check as
first built, ``--rules joins,from,keys,case`` as it was before the unrelated parts, ``--rules
joins`` or ``--rules case`` one rule alone (``from``, ``keys`` and ``parts`` act only with
``joins``).

``--recorded`` reads a folder evaluated with the check on instead: each run's SQL before its
Final check (the step's ``sql_before``) against the SQL it ended on, both scored -- the check's
effect on that evaluation, with nothing replayed.

``--resumed`` (repeatable, in the order they were measured) lays measurements made since over
the folder -- resumed runs and replays alike: a row with a final SQL (``sql_after``) replaces
the run's, so the replay starts from each pipeline's figure of today. A run that failed or was
stopped never reaches the check and is left as it was. The check reads the schema the run's
agents saw: the part schema retrieval kept where it ran (for a run resumed from retrieval,
whose measurement kept the tables but not their column lists, those tables whole).
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
from agents.rules.final_check import CASE, FROM_TABLE, JOINS, KEYS, PARTS, STEP, ending_for
from agents.retrieval import RETRIEVE  # noqa: E402
from agents.core.step_context import RETRIEVED_FIRST, RETRIEVED_SCHEMA
from agents.core.step_context import ExecLimits

sys.path.insert(0, str(ROOT / "bench"))
from vote_rules import ask_path  # noqa: E402
from first_drafts import read_answers  # noqa: E402
from runnable_endings import ex_summary, ex_totals, write_report  # noqa: E402


def laid_over(paths: list[str]) -> dict[int, dict]:
    """Each question's latest measured final SQL and verdict over ``paths``, in order."""
    latest: dict[int, dict] = {}
    for path in paths:
        for row in json.loads(Path(path).read_text(encoding="utf-8"))["rows"]:
            if "sql_after" in row and row.get("resumed", True):
                latest[int(row["question_id"])] = {
                    "sql": row["sql_after"], "correct": bool(row["after"]), "from": path,
                    # a replay's row keeps the run's status; a resumed run's says its own
                    "status": row.get("status"), "events": row.get("events")}
    return latest


def kept_schema(schema, record: dict, later: dict | None):
    """The schema the run's agents saw: the part schema retrieval kept, where it ran (a run
    resumed from retrieval kept what its own retrieval step shows, whole tables), else the
    whole."""
    events = (later or {}).get("events") or []
    step = next((e for e in events if e.get("step") == RETRIEVE), None)
    if step is not None:
        parsed = step.get("parsed") or {}
        return schema.subset({row["table"]: "keep_all" for row in parsed.get("kept") or []})\
            .with_first(parsed.get("first") or [])
    recorded = ((record.get("run") or {}).get("events") or [{}])[-1].get("data") or {}
    kept = recorded.get(RETRIEVED_SCHEMA)
    return (schema.subset(kept).with_first(recorded.get(RETRIEVED_FIRST) or []) if kept
            else schema)


def _ended(record: dict, later: dict | None) -> bool:
    """Whether the run reached its end (a failed or stopped run never reaches the check)."""
    status = (later or {}).get("status") or (record.get("run") or {}).get("status")
    return status in (None, "done")


RULES = {"joins": JOINS, "from": FROM_TABLE, "keys": KEYS, "parts": PARTS, "case": CASE}


def measure(pipeline: str, folder: str, resumed: list[str], data: Path,
            asked_on: str | None, rules: list[str]) -> dict:
    params = {RULES[name]: True for name in rules}
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
        if not _ended(record, later.get(q)):
            continue
        found = ending_for(sql, kept_schema(asked.schema, record, later.get(q)),
                           record["question"], asked, params, timeout=limits.timeout,
                           max_rows=limits.max_rows)
        if found is not None:
            mended, _ = found
            after = score(own, record["gold_sql"], mended.sql, options, pred_db=asked)
            row.update(after=bool(after["correct"]), sql_after=mended.sql,
                       tables=mended.tables, by_key=mended.by_key, values=mended.values,
                       apart=mended.apart)
    return {"pipeline": pipeline, "results": folder, "resumed": resumed, "ask_db": asked_on,
            "rules": rules, "questions": len(rows), **ex_totals(rows),
            "mended": sum(1 for r in rows if "sql_after" in r), "rows": rows}


def recorded(pipeline: str, folder: str, data: Path, asked_on: str | None) -> dict:
    """The Final check's effect on runs recorded with it: EX before it and after it."""
    _, answers = read_answers(folder, pipeline)
    pool, options = DatabasePool(), EvalOptions()
    rows = []
    for q, record in sorted(answers.items()):
        events = (record.get("run") or {}).get("events") or []
        check = next((e for e in events if e.get("step") == STEP), None)
        row = {"question_id": q, "before": bool(record["correct"]),
               "after": bool(record["correct"]), "sql_after": record.get("pred_sql")}
        if check is not None and (check.get("parsed") or {}).get("sql_before"):
            own = pool.get(str(data / "database" / record["db_id"]
                               / f"{record['db_id']}.sqlite"))
            asked = pool.get(asked_on) if asked_on else own
            sql = check["parsed"]["sql_before"]
            before = score(own, record["gold_sql"], sql, options, pred_db=asked)
            row.update(before=bool(before["correct"]), sql_before=sql,
                       tables=check["parsed"].get("tables"),
                       values=check["parsed"].get("values"),
                       apart=check["parsed"].get("apart"))
        rows.append(row)
    return {"pipeline": pipeline, "results": folder, "recorded": True, "ask_db": asked_on,
            "questions": len(rows), **ex_totals(rows),
            "mended": sum(1 for r in rows if "sql_before" in r), "rows": rows}


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
    parser.add_argument("--rules", default="joins,from,keys,parts,case",
                        help="the Final check's rules to replay, of joins, from, keys, parts, "
                             "case (from, keys and parts only with joins)")
    parser.add_argument("--recorded", action="store_true",
                        help="a folder evaluated with the check on: EX before and after it")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    if args.recorded:
        report = recorded(args.pipeline, args.results, Path(args.data),
                          ask_path(args.results, args.ask_db))
        write_report(args.out, report)
        print(f"{ex_summary(args.pipeline, args.results, report)}, {report['mended']} final "
              "SQL(s) mended by the recorded Final check")
        return 0
    rules = [r for r in args.rules.split(",") if r]
    if not rules or set(rules) - set(RULES):
        parser.error(f"--rules: a comma-separated list of {', '.join(RULES)}")
    report = measure(args.pipeline, args.results, args.resumed, Path(args.data),
                     ask_path(args.results, args.ask_db), rules)
    write_report(args.out, report)
    print(f"{ex_summary(args.pipeline, args.results, report)}, {report['mended']} final "
          f"SQL(s) mended ({', '.join(rules)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
