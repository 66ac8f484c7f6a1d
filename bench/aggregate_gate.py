"""R³'s aggregate gate measured on recorded runs, without the model.

``python bench/aggregate_gate.py --results bench/results/seed7-r3-small --resumed
bench/results/rewrite-seed7-r3.json --data ../shared/data/spider --out
bench/results/aggregate-gate-seed7-r3.json``

With ``aggregate_gate`` (:mod:`agents.rules.arbitrary_rows`) an R³ revision that runs but takes
columns from an arbitrary row -- an aggregate beside an ungrouped column, no GROUP BY -- where
the SQL before it did not, is not adopted: the SQL before it is final and the loop ends. That
refusal is decided from the two SQL texts and ends the run, so replaying it on a recorded run
is what running the pipeline again would do (temperature 0, the same steps before it): the
first revision of the run the gate refuses is found in its recorded steps, and the SQL before
it is scored with the evaluation's own scoring on the question's own database. A revision the
recorded run already refused (it failed, or emptied the result) is passed over.

``--resumed`` lays a measurement of runs resumed since over the folder. Measurements made now
record each resumed step (:mod:`agents.evaluation.resume_recorded`), so such a run is replayed
as the recording up to where it was resumed followed by those steps. Older measurements kept
only the final SQL and the step names: the gate is then known to leave a run alone only where it
revised at most once and its final SQL is no such revision; the others are listed under
``unknown``, kept as they were, and counted in the report.
Nothing is asserted: it is a measurement.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agents.rules.arbitrary_rows import arbitrary_row_aggregate
from agents.evaluation.harness import DatabasePool, score  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))
from first_drafts import options_of, read_answers  # noqa: E402
from runnable_endings import (ex_summary, ex_totals, replay_arguments,  # noqa: E402
                              write_report)


def refused_revision(events: list[dict]) -> dict | None:
    """The first revision of a recorded R³ run that the gate refuses: ``{"sql_before",
    "revision", "found"}``, or None. A revision is refused when its execution ran and was
    adopted in the recording, and it newly takes columns from an arbitrary row."""
    for index, event in enumerate(events):
        parsed = event.get("parsed") or {}
        if event.get("step") != "revise" or not parsed.get("changed"):
            continue
        before, revision = parsed.get("sql_before"), parsed.get("sql_after")
        found = arbitrary_row_aggregate(revision)
        if not found or arbitrary_row_aggregate(before):
            continue
        check = next((e for e in events[index + 1:] if e.get("step") == "execute"), None)
        ran = bool(check and (check.get("execution") or {}).get("ok"))
        already_refused = bool(check and any("not adopted" in note
                                             for note in check.get("notes") or []))
        if ran and not already_refused:
            return {"sql_before": before, "revision": revision, "found": found}
    return None


def resumed_rows(path: str | None) -> dict[int, dict]:
    if not path:
        return {}
    rows = json.loads(Path(path).read_text(encoding="utf-8"))["rows"]
    return {int(r["question_id"]): r for r in rows if r.get("resumed")}


def measure(folder: str, resumed: str | None, data: Path) -> dict:
    _, answers = read_answers(folder, "r3")
    options, pool = options_of(folder), DatabasePool()
    laid_over = resumed_rows(resumed)
    rows, unknown = [], []
    for q, record in sorted(answers.items()):
        db = pool.get(str(data / "database" / record["db_id"] / f"{record['db_id']}.sqlite"))
        events = (record.get("run") or {}).get("events") or []
        later = laid_over.get(q)
        if later is not None and later.get("events") is not None:
            # resumed since, with its steps recorded: the recording up to it, then those steps
            events = events[:later["from_index"]] + later["events"]
        elif later is not None:
            sql = later.get("sql_after")
            verdict = score(db, record["gold_sql"], sql, options)
            row = {"question_id": q, "resumed_before": True, "before": bool(verdict["correct"]),
                   "after": bool(verdict["correct"]), "sql_before": sql}
            revisions = (later.get("steps") or []).count("revise")
            if revisions > 1 or (revisions and arbitrary_row_aggregate(sql)):
                unknown.append(q)
                row["unknown"] = True
            rows.append(row)
            continue
        sql = later.get("sql_after") if later is not None else record.get("pred_sql")
        before = score(db, record["gold_sql"], sql, options)
        if before.get("gold_error"):
            continue
        refused = refused_revision(events)
        after = score(db, record["gold_sql"], refused["sql_before"], options) if refused else before
        rows.append({"question_id": q, "resumed_before": later is not None,
                     "before": bool(before["correct"]),
                     "after": bool(after["correct"]), "sql_before": sql,
                     **({"sql_after": refused["sql_before"], "refused": refused["revision"],
                         "found": refused["found"]} if refused else {})})
    return {"pipeline": "r3", "results": folder, "resumed": resumed, "questions": len(rows),
            **ex_totals(rows),
            "refusals": sum(1 for r in rows if "refused" in r), "unknown": unknown,
            "rows": rows}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    replay_arguments(parser, "an R³ evaluation folder")
    args = parser.parse_args(argv)
    report = measure(args.results, args.resumed, Path(args.data))
    write_report(args.out, report)
    print(f"{ex_summary('r3', args.results, report)}, {report['refusals']} revision(s) "
          f"refused, "
          f"{len(report['unknown'])} resumed run(s) whose revisions were not recorded and may "
          f"have met it: {report['unknown']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
