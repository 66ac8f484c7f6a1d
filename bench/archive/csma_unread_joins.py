"""CSMA's ``ignore_unread_joins`` measured on recorded runs, without the model.

``python bench/archive/csma_unread_joins.py --results bench/results/seed7-csma-agreement --resumed
bench/results/rewrites-seed7-csma.json --data ../shared/data/spider --out
bench/results/unread-joins-seed7-csma.json``

With ``ignore_unread_joins`` an agreement check whose agent's own SQL returned another result
than the checked SQL, but joins a table nothing in it reads that the checked SQL does not name,
compares the own SQL without that join (:mod:`agents.rules.unread_joins`); the same result is a
positive check, which ends the run with the checked SQL. Every input of that decision is in the
recording (the checked SQL, the own SQL the model wrote for the check, the database), so it is
replayed with the pipeline's own function (``agreement_without_unread_joins``) on the first
negative agreement check of each run: where it turns positive, the checked SQL is the run's
answer and is scored with the evaluation's own scoring. A run the rule leaves alone keeps its
answer. Nothing later in a run changes the earlier checks, so the first check it turns is the
only one that matters. Where the own SQL without the join returns no rows, as the checked SQL
does, two empty results say little and the model judges the check, as it does for any two
empty results: such runs are listed under ``judged`` (kept as they were in the replay's
figure) and resumed at that check, on the embedded model, with ``--judged`` (the other options
are those of ``bench/csma_rewrites.py``: ``--results``, ``--data``, ``--param``, ``--out``).
The replay uses the database's whole schema, as the pipeline does on a database that schema
retrieval leaves whole (every folder measured here).

``--resumed`` lays a measurement of runs resumed since over the folder (``bench/csma_rewrites.py``,
which recorded the final SQL and the step names, not the steps): such a run is replayed up to
where it was resumed; when the rule turns none of those checks and the resumed steps hold a
check, the run is listed under ``unknown`` and kept as it was.
Nothing is asserted: it is a measurement.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from agents.evaluation.harness import DatabasePool, score  # noqa: E402
from agents.evaluation.resume_recorded import main as resume_main  # noqa: E402
from agents.core.events import Run
from agents.pipelines.csma import PIPELINE  # noqa: E402
from agents.pipelines.csma.check import agreement_without_unread_joins  # noqa: E402
from agents.core.step_context import ExecLimits

sys.path.insert(0, str(ROOT / "bench"))
from aggregate_gate import resumed_rows  # noqa: E402
from csma_rewrites import _database  # noqa: E402
from first_drafts import options_of, read_answers  # noqa: E402
from runnable_endings import (ex_summary, ex_totals, replay_arguments,  # noqa: E402
                              write_report)


def turned_check(events: list[dict], db, limits: ExecLimits) -> dict | None:
    """The first negative agreement check of a recorded run that the rule acts on: ``{"index",
    "checked", "own", "compared", "tables", "says_little"}`` (``says_little``: both results
    are empty, so the model judges instead of the check turning positive), or None."""
    for index, event in enumerate(events):
        parsed = event.get("parsed") or {}
        if not str(event.get("step", "")).startswith("check:"):
            continue
        if parsed.get("method") != "agreement" or parsed.get("agrees") is not False:
            continue
        checked = db.execute(parsed["sql"], timeout=limits.timeout, max_rows=limits.max_rows)
        found = agreement_without_unread_joins(db, db.schema, checked, parsed["own_sql"],
                                               limits.timeout, limits.max_rows)
        if found is not None:
            unread, says_little = found
            return {"index": index, "checked": parsed["sql"], "own": parsed["own_sql"],
                    "compared": unread.sql, "tables": unread.tables,
                    "says_little": says_little}
    return None


def measure(folder: str, resumed: str | None, data: Path) -> dict:
    _, answers = read_answers(folder, "csma")
    options, pool, limits = options_of(folder), DatabasePool(), ExecLimits()
    laid_over = resumed_rows(resumed)
    rows, unknown, judged = [], [], []
    for q, record in sorted(answers.items()):
        db = pool.get(str(data / "database" / record["db_id"] / f"{record['db_id']}.sqlite"))
        events = (record.get("run") or {}).get("events") or []
        later = laid_over.get(q)
        sql = later["sql_after"] if later is not None else record.get("pred_sql")
        before = score(db, record["gold_sql"], sql, options)
        if before.get("gold_error"):
            continue
        if later is not None:  # only the steps before the resumed one are recorded
            events = events[:_index_of(events, later.get("from_step"))]
        turned = turned_check(events, db, limits)
        row = {"question_id": q, "resumed_before": later is not None,
               "before": bool(before["correct"]), "after": bool(before["correct"]),
               "sql_before": sql}
        if turned is not None and turned["says_little"]:
            judged.append(q)  # the model's verdict decides: resumed with --judged
            row.update(judged=True, unread_joins=turned["tables"])
        elif turned is not None:
            after = score(db, record["gold_sql"], turned["checked"], options)
            row.update(after=bool(after["correct"]), sql_after=turned["checked"],
                       own_sql=turned["own"], compared=turned["compared"],
                       unread_joins=turned["tables"])
        elif later is not None and any(s.startswith("check:") for s in later.get("steps") or []):
            unknown.append(q)
            row["unknown"] = True
        rows.append(row)
    return {"pipeline": "csma", "results": folder, "resumed": resumed, "questions": len(rows),
            **ex_totals(rows),
            "turned": sum(1 for r in rows if "compared" in r), "judged": judged,
            "unknown": unknown, "rows": rows}


def _index_of(events: list[dict], step: str | None) -> int:
    """Where the resumed step first is in the recording (all of it when it is not found): a
    step name met again in a later round cuts earlier, never later, than the resumption."""
    return next((i for i, e in enumerate(events) if e.get("step") == step), len(events))


def judged_check(run: Run) -> int | None:
    """Where the model's verdict decides a check the rule acts on (both results empty without
    the join): the run is resumed there (``--judged``)."""
    db = _database(run.db_path) if run.db_path else None
    if db is None:
        return None
    events = [e.to_dict() for e in run.events]
    turned = turned_check(events, db, ExecLimits())
    return turned["index"] if turned is not None and turned["says_little"] else None


def judged_after(run: Run, index: int) -> dict:
    check = run.events[index].parsed or {}
    return {"verdict": check.get("verdict"), "reason": check.get("reason")}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--judged" in argv:
        argv.remove("--judged")
        return resume_main(argv, PIPELINE, judged_check, judged_after,
                           __doc__.split("\n\n")[0])
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    replay_arguments(parser, "a CSMA evaluation folder")
    args = parser.parse_args(argv)
    report = measure(args.results, args.resumed, Path(args.data))
    write_report(args.out, report)
    print(f"{ex_summary('csma', args.results, report)}, {report['turned']} check(s) "
          f"turned positive, "
          f"{len(report['judged'])} left to the model's verdict (resume them with --judged): "
          f"{report['judged']}, "
          f"{len(report['unknown'])} resumed run(s) whose later checks were not recorded: "
          f"{report['unknown']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
