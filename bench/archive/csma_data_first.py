"""CSMA's global check with ``global_data_first``, replayed on recorded runs without the model.

``python bench/archive/csma_data_first.py --results bench/results/seed8-csma-fresh --resumed
bench/results/global-check-seed8-csma.json --resumed
bench/results/global-writer-repair-seed8-csma.json --data ../shared/data/spider --out
bench/results/data-first-seed8-csma.json``

``global_data_first`` changes only the end of a global check that found no agreement: where the
agents' last SQL finds no data (no rows, or NULLs only) and the global writer's SQL finds some,
the writer's SQL becomes the answer (:mod:`agents.pipelines.csma.global_writer`). The writer's
SQL, the agents' last SQL and whether any of the agents' SQL agreed are all in the recorded
step, so nothing is asked again: both SQL are run on the file the question was asked on, and
where the rule acts the Final check that ends every run is replayed on the writer's SQL with
the pipeline's own function (``ending_for``, every rule on, as CSMA runs it today) and the result
scored with the evaluation's own scoring. The global check's step is read from the latest
measurement that holds the run (``--resumed``, laid over in the order given, a later one
replacing an earlier one's row, as in ``bench/final_checks.py``: so a measurement made with an
option off comes before one made with it on -- above, the check's, made with ``global_writer``
off, before the global writer's), else from the folder's own record (an evaluation run with
``global_check`` on). Verdicts are scored with the folder's own scoring options (its manifest).
Nothing is asserted: it is a measurement.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from agents.runs.candidates import Candidate, has_data
from agents.evaluation.harness import DatabasePool, EvalOptions, score  # noqa: E402
from agents.pipelines.csma.global_writer import STEP  # noqa: E402
from agents.rules.final_check import RULES, ending_for
from agents.core.step_context import ExecLimits
from vote_rules import ask_path  # noqa: E402
from final_checks import kept_schema, laid_over  # noqa: E402
from first_drafts import read_answers  # noqa: E402
from runnable_endings import ex_summary, ex_totals, write_report  # noqa: E402


def global_check(record: dict, later: dict | None) -> dict | None:
    """The run's global check that found no agreement (the step's ``parsed``), else None."""
    events = (later or {}).get("events") or (record.get("run") or {}).get("events") or []
    step = next((e for e in reversed(events) if e.get("step") == STEP), None)
    parsed = (step or {}).get("parsed") or {}
    if parsed.get("mode") != "check" or parsed.get("agreed_sql") or not parsed.get("sql"):
        return None
    return parsed


def finds_data(db, sql: str, limits: ExecLimits) -> bool | None:
    """Whether ``sql`` finds data on ``db``; None when it fails."""
    result = db.execute(sql, timeout=limits.timeout, max_rows=limits.max_rows)
    if not result.ok:
        return None
    return has_data(Candidate.from_result("replay", sql, result).result)


def options_of(folder: str) -> EvalOptions:
    """The scoring options the folder was evaluated with (its manifest)."""
    manifest = Path(folder) / "manifest.json"
    recorded = json.loads(manifest.read_text()) if manifest.is_file() else {}
    return EvalOptions(keep_distinct=bool(recorded.get("keep_distinct", False)))


def measure(folder: str, resumed: list[str], data: Path, asked_on: str | None) -> dict:
    _, answers = read_answers(folder, "csma")
    pool, options, limits = DatabasePool(), options_of(folder), ExecLimits()
    later = laid_over(resumed)
    params = dict.fromkeys(RULES, True)
    rows = []
    for q, record in sorted(answers.items()):
        own = pool.get(str(data / "database" / record["db_id"] / f"{record['db_id']}.sqlite"))
        asked = pool.get(asked_on) if asked_on else own
        before = later[q]["correct"] if q in later else bool(record["correct"])
        sql = later[q]["sql"] if q in later else record.get("pred_sql")
        row = {"question_id": q, "before": before, "after": before, "sql_before": sql}
        rows.append(row)
        check = global_check(record, later.get(q))
        if check is None:
            continue
        writer, last = check["sql"], check.get("agents_sql") or ""
        row.update(checked=True, writer_sql=writer, agents_sql=last,
                   writer_data=finds_data(asked, writer, limits),
                   agents_data=finds_data(asked, last, limits))
        if not (row["writer_data"] and row["agents_data"] is False):
            continue
        found = ending_for(writer, kept_schema(asked.schema, record, later.get(q)),
                           record["question"], asked, params, timeout=limits.timeout,
                           max_rows=limits.max_rows)
        final = found[0].sql if found is not None else writer
        after = score(own, record["gold_sql"], final, options, pred_db=asked)
        row.update(after=bool(after["correct"]), sql_after=final, acts=True)
    return {"pipeline": "csma", "results": folder, "resumed": resumed, "ask_db": asked_on,
            "questions": len(rows), **ex_totals(rows),
            "checks_without_agreement": sum(1 for r in rows if r.get("checked")),
            "acts": sum(1 for r in rows if r.get("acts")), "rows": rows}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", required=True, help="a CSMA evaluation folder")
    parser.add_argument("--resumed", action="append", default=[],
                        help="a measurement laid over the folder (repeatable, in order)")
    parser.add_argument("--data", required=True, help="the Spider folder")
    parser.add_argument("--ask-db", default=None,
                        help="the file the folder's questions were asked on, where its "
                             "manifest's ask_db path is not there")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    report = measure(args.results, args.resumed, Path(args.data),
                     ask_path(args.results, args.ask_db))
    write_report(args.out, report)
    print(f"{ex_summary('csma', args.results, report)}, {report['acts']} of "
          f"{report['checks_without_agreement']} global checks without agreement changed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
