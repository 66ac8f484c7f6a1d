"""The `selection` pipeline's vote and selection agent again, on the candidates of a recorded run.

``python bench/reselect.py --results bench/results/seed7-selection --data ../shared/data/spider
--param select_orders=2 --out bench/results/reselect-seed7-orders2.json``

Every `selection` run of an evaluation folder is resumed from its ``vote`` step with the given
parameters (the engine's ``resume_run``, as the app's "resume from here" does): the candidates
and their repairs are the recorded ones, so only the vote and the selection agent run again,
on the embedded model (temperature 0, no response cache). Each new final SQL is scored with the
evaluation's own scoring on the question's database. It prints, and writes to ``--out``, EX
before and after, the questions that changed, and the selection agent's calls and seconds.

Why a resume rather than a new evaluation: the candidates cost 90% of the pipeline's time, and
one of them is sampled at a temperature above 0, so a new evaluation would change the
candidates as well as the selection. Resuming measures the selection alone on the same inputs.
With ``--param generators=...`` the recorded candidates are voted on in the new order of trust
(the order that breaks ties and orders the selection agent's options).
Nothing is asserted: it is a measurement.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agents.cli import UsageError, parse_params  # noqa: E402
from agents.engine import resume_run, run_to_end  # noqa: E402
from agents.evaluation.harness import DatabasePool, EvalOptions, score  # noqa: E402
from agents.evaluation.records import ResultsFile  # noqa: E402
from agents.evaluation.report import machine_info  # noqa: E402
from agents.events import Run  # noqa: E402
from agents.pipelines.selection import PIPELINE  # noqa: E402


def reselect(record: dict, db_path: str, overrides: dict, pool: DatabasePool, llm,
             options: EvalOptions) -> dict:
    previous = Run.from_dict(record["run"])
    steps = [e.step for e in previous.events]
    out = {"question_id": record["question_id"], "hardness": record.get("hardness"),
           "before": bool(record["correct"])}
    if "vote" not in steps:
        return {**out, "after": out["before"], "resumed": False}
    vote = steps.index("vote")
    db = pool.get(db_path)
    params = {**previous.params, **overrides}
    started = time.perf_counter()
    run = run_to_end(resume_run(PIPELINE, previous, vote, db, llm, params=params))
    verdict = score(db, record["gold_sql"], run.final_sql, options)
    rerun = run.events[vote:]
    calls = [c for e in rerun for c in e.calls]
    return {**out, "after": bool(verdict["correct"]), "resumed": True,
            "steps": [e.step for e in rerun],
            "calls": len(calls), "seconds": round(time.perf_counter() - started, 2),
            "sql_before": record.get("pred_sql"), "sql_after": run.final_sql,
            "selection": (run.events[-1].parsed if run.events[-1].step == "select" else None)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", required=True, help="evaluation folder with results.jsonl")
    parser.add_argument("--data", required=True, help="the Spider folder it was evaluated on")
    parser.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                        help="a selection parameter for the resumed steps (repeatable)")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    try:
        overrides = parse_params(PIPELINE, args.param)
    except UsageError as exc:
        raise SystemExit(str(exc)) from None

    from agents.config import load_settings
    from agents.llm import make_client

    llm = make_client(load_settings(provider="local", cache=False))
    pool, options = DatabasePool(), EvalOptions()
    records = [r for r in ResultsFile(Path(args.results) / "results.jsonl").read()
               if r["pipeline"] == PIPELINE.name]
    load_before = os.getloadavg()
    rows = []
    for record in records:
        db_path = str(Path(args.data) / "database" / record["db_id"]
                      / f"{record['db_id']}.sqlite")
        row = reselect(record, db_path, overrides, pool, llm, options)
        rows.append(row)
        if row.get("calls"):
            print(f"  q{row['question_id']}: {row['before']} -> {row['after']} "
                  f"({row['calls']} calls, {row['seconds']} s)", flush=True)
    selected = [r for r in rows if r.get("calls")]
    report = {
        "machine": machine_info(), "load_average_before": load_before,
        "load_average_after": os.getloadavg(), "results": args.results, "params": overrides,
        "questions": len(rows), "ex_before": sum(r["before"] for r in rows),
        "ex_after": sum(r["after"] for r in rows),
        "fixed": [r["question_id"] for r in rows if r["after"] and not r["before"]],
        "broken": [r["question_id"] for r in rows if r["before"] and not r["after"]],
        "selection_agent_runs": len(selected),
        "selection_agent_calls": sum(r["calls"] for r in selected),
        "selection_seconds_p50": (round(statistics.median(r["seconds"] for r in selected), 2)
                                  if selected else None),
        "rows": rows}
    Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps({k: v for k, v in report.items() if k != "rows"}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
