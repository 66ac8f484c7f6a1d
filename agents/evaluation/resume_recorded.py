"""Recorded evaluation runs resumed from one of their steps with new parameters, and scored.

What ``bench/reselect.py``, ``bench/retry_repeats.py``, ``bench/name_error_repairs.py``,
``bench/failed_checks.py``, ``bench/recandidate.py``, ``bench/second_repairs.py``,
``bench/csma_checks.py``, ``bench/csma_rewrites.py`` and ``bench/csma_failing_rounds.py`` are
made of. A change that acts only
from a certain step on (the vote's order of trust; what a repair does when the model repeats
itself, what its prompt shows of a name error, how many repairs it may make; how a check is
made; what an agent's failing SQL becomes) is measured by
resuming each recorded run at that step with the engine's ``resume_run``, as the app's "resume
from here" does: every step before it is the recorded one, so the measurement shows what the
change does on the same inputs, at the cost of the steps after it only. A run without such a
step is unchanged by construction and keeps its recorded verdict. Each new final SQL is scored
with the evaluation's own scoring on the question's database, on the embedded model (temperature
as the pipeline sets it, no response cache). The resumed steps run on the database the
question was asked on (its own, or the folder manifest's ``ask_db`` -- or ``--ask-db`` -- a
merged file, where the prediction is then scored while the gold query runs on the question's
own database, as in the evaluation) with the default query limits and the example bank the
folder was evaluated with (its manifest's ``examples``, or ``--examples``), since a resumed step
may look examples up again (a ``selection`` candidate written anew does). The report is written
after every resumed run and lists its sittings (start, end, commit, load average;
:mod:`.sittings`); ``--continue`` picks a stopped measurement up where it ended. A results
line without a run (its database could not be opened) keeps its verdict too. ``--question``
resumes only the named questions' records: a change known to touch a few questions is measured
at the cost of those runs, and their rows laid over an earlier report's by whoever reads both.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Callable

from agents.cli.options import UsageError, parse_params
from agents.core.config import load_settings
from agents.core.engine import Pipeline, resume_run, run_to_end
from agents.core.events import Run
from agents.llm.client import make_client
from .command import load_example_bank
from .harness import DatabasePool, EvalOptions, score
from .records import ResultsFile
from .report import machine_info
from .sittings import Sitting, carried_on

FindStep = Callable[[Run], "int | None"]     # the index to resume a recorded run from, or None
Describe = Callable[[Run, int], dict]        # extra fields of a resumed run's row


def resume_record(record: dict, pipeline: Pipeline, find: FindStep, describe: Describe,
                  db_path: str, overrides: dict, pool: DatabasePool, llm,
                  options: EvalOptions, services: dict | None = None,
                  ask_path: str | None = None) -> dict:
    out = {"question_id": record["question_id"], "hardness": record.get("hardness"),
           "before": bool(record["correct"])}
    previous = Run.from_dict(record["run"]) if record.get("run") else None
    index = find(previous) if previous is not None else None
    if index is None:
        return {**out, "after": out["before"], "resumed": False}
    db = pool.get(db_path)
    asked = pool.get(ask_path) if ask_path else db
    params = {**previous.params, **overrides}
    started = time.perf_counter()
    run = run_to_end(resume_run(pipeline, previous, index, asked, llm, params=params,
                                services=services))
    verdict = score(db, record["gold_sql"], run.final_sql, options, pred_db=asked)
    rerun = run.events[index:]
    calls = [c for e in rerun for c in e.calls]
    return {**out, "after": bool(verdict["correct"]), "resumed": True,
            "from_step": previous.events[index].step if index < len(previous.events) else None,
            "steps": [e.step for e in rerun], "status": run.status,
            "runs_before": bool((record.get("pred") or {}).get("ok")),
            "runs_after": bool((verdict.get("pred") or {}).get("ok")),
            "calls": len(calls), "seconds": round(time.perf_counter() - started, 2),
            "sql_before": record.get("pred_sql"), "sql_after": run.final_sql,
            "from_index": index, "events": [_replayable(e) for e in rerun],
            **describe(run, index)}


def _replayable(event) -> dict:
    """What a later replay on recorded runs reads of a resumed step (``bench/aggregate_gate.py``
    reads revisions): its step, SQL, parsed output, whether its SQL ran, and its notes -- not
    its prompts, which would make the report as large as the runs."""
    execution = event.execution or {}
    return {"step": event.step, "sql": event.sql, "parsed": event.parsed,
            "execution": {"ok": execution.get("ok"), "sql": execution.get("sql")}
            if execution else None, "notes": list(event.notes)}


def _manifest(folder: str) -> dict:
    try:
        return json.loads((Path(folder) / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def example_services(path: str | None) -> dict:
    """``{"examples": bank}`` for the runs' services, or ``{}`` without a bank file."""
    if not path:
        return {}
    return {"examples": load_example_bank(path)}


def summary(rows: list[dict], settings: dict) -> dict:
    """The report of the rows so far (``complete`` once every record has its row)."""
    resumed = [r for r in rows if r["resumed"]]
    called = [r for r in resumed if r["calls"]]
    return {
        **settings,
        "complete": len(rows) == settings["records"],
        "questions": len(rows), "ex_before": sum(r["before"] for r in rows),
        "ex_after": sum(r["after"] for r in rows),
        "fixed": [r["question_id"] for r in rows if r["after"] and not r["before"]],
        "broken": [r["question_id"] for r in rows if r["before"] and not r["after"]],
        "resumed_runs": len(resumed),
        # the resumed runs that called the model (a decisive vote resumed does not)
        "runs_with_calls": len(called), "calls": sum(r["calls"] for r in called),
        "seconds_p50": (round(statistics.median(r["seconds"] for r in called), 2)
                        if called else None),
        "rows": rows}


def earlier_report(out: Path, settings: dict) -> dict:
    """The earlier report at ``out`` that a continued measurement carries on: its rows and
    sittings are kept when it measured the same folder, pipeline, parameters, example bank,
    file asked on and questions (paths compared as the files they name); otherwise a clear
    refusal (continuing under other settings would mix two measurements in one report). No
    report yet: an empty one."""
    try:
        earlier = json.loads(out.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {"rows": [], "sittings": []}
    except (OSError, ValueError) as exc:
        raise SystemExit(f"--continue: {out} is not a readable report ({exc})") from None
    if not isinstance(earlier, dict) or not isinstance(earlier.get("rows") or [], list):
        raise SystemExit(f"--continue: {out} is not a report of this script")

    def same(key: str) -> bool:
        if key in ("results", "examples", "ask_db") and earlier.get(key) and settings.get(key):
            return Path(earlier[key]).resolve() == Path(settings[key]).resolve()
        return earlier.get(key) == settings.get(key)

    differing = [k for k in ("results", "pipeline", "params", "examples", "ask_db", "only")
                 if not same(k)]
    if differing:
        raise SystemExit(f"--continue: {out} was measured with another "
                         f"{', '.join(differing)}; write to a new --out instead")
    return {"rows": [r for r in earlier.get("rows") or []
                     if isinstance(r, dict) and "question_id" in r],
            "sittings": carried_on(earlier.get("sittings") or [])}


def _write_json(path: Path, data: dict) -> None:
    """Write ``data`` whole or not at all: a measurement killed mid-write keeps its last
    report readable for ``--continue``."""
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    os.replace(partial, path)


def measure(records: list[dict], resume_one: Callable[[dict], dict], out: Path,
            settings: dict, earlier: dict) -> tuple[dict, int]:
    """Resume every record ``earlier`` has no row for, writing the report at ``out`` after
    each resumed run; the final report and the exit code. Stopped by Ctrl-C or an error, the
    report still gets the rows so far and the sitting says how it ended."""
    rows, sitting = list(earlier["rows"]), Sitting()
    done = {r["question_id"] for r in rows}
    if done:
        print(f"continuing: {len(done)} rows kept from {out}", flush=True)

    def report(record: dict) -> dict:
        return summary(rows, {**settings, "sittings": [*earlier["sittings"], record]})

    status, ended_as = 0, "done"
    try:
        for record in records:
            if record["question_id"] in done:
                continue
            row = resume_one(record)
            rows.append(row)
            sitting.count_result()
            if row["resumed"] and row["calls"]:
                print(f"  q{row['question_id']}: {row['before']} -> {row['after']} "
                      f"({row['calls']} calls, {row['seconds']} s)", flush=True)
                # written as it goes: a measurement stopped early keeps the rows it has
                _write_json(out, report(sitting.so_far()))
    except KeyboardInterrupt:
        print(f"\ninterrupted; --continue with the same --out {out} carries it on")
        status, ended_as = 130, "interrupted"
    except Exception as exc:
        print(f"error: {type(exc).__name__}: {exc}; --continue with the same --out {out} "
              "carries it on")
        status, ended_as = 1, "failed"
    final = report(sitting.finish(ended_as))
    _write_json(out, final)
    return final, status


def chosen_records(records: list[dict], pipeline: str, questions: list[int]) -> list[dict]:
    """The records of ``pipeline`` to resume: all of them, or only those of ``questions``
    (every one of which must have a record: a mistyped id would silently measure nothing)."""
    mine = [r for r in records if r["pipeline"] == pipeline]
    if not questions:
        return mine
    chosen = [r for r in mine if r["question_id"] in questions]
    missing = sorted(set(questions) - {r["question_id"] for r in chosen})
    if missing:
        raise SystemExit(f"--question: no {pipeline} record for question "
                         f"{', '.join(map(str, missing))}")
    return chosen


def leading_option(argv: list[str] | None, option: str, choices: list[str], doc: str,
                   check: Callable[[str], None] | None = None) -> tuple[str, list[str]]:
    """A script's required ``option`` that decides what the rest of its arguments mean (the
    pipeline, the candidate), taken out of ``argv`` before :func:`main` parses the rest.
    Without it, ``--help`` prints the script's ``doc`` and exits 0, anything else exits 2
    naming ``choices``; ``check`` may refuse a value by raising ``ValueError``."""
    first = argparse.ArgumentParser(add_help=False)
    first.add_argument(option)
    known, rest = first.parse_known_args(argv)
    value = getattr(known, option.lstrip("-").replace("-", "_"))
    if value is None:
        if {"-h", "--help"} & set(rest):
            print(doc)
            raise SystemExit(0)
        print(f"{option} is required: one of {', '.join(choices)}", file=sys.stderr)
        raise SystemExit(2)
    try:
        if check is not None:
            check(value)
        elif value not in choices:
            raise ValueError(f"{value!r} is not one of {', '.join(choices)}")
    except ValueError as exc:
        print(f"{option}: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    return value, rest


def main(argv: list[str] | None, pipeline: Pipeline, find: FindStep, describe: Describe,
         description: str) -> int:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--results", required=True, help="evaluation folder with results.jsonl")
    parser.add_argument("--data", required=True, help="the Spider folder it was evaluated on")
    parser.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                        help=f"a {pipeline.name} parameter for the resumed steps (repeatable)")
    parser.add_argument("--examples", default=None,
                        help="the example bank (Spider-format JSON) for resumed steps; default: "
                             "the one the folder's manifest names")
    parser.add_argument("--ask-db", default=None,
                        help="the file the folder's questions were asked on, where its manifest's "
                             "ask_db path is not there (a merged file built again elsewhere)")
    parser.add_argument("--question", dest="questions", action="append", type=int, default=[],
                        metavar="ID", help="resume only this question's record (repeatable): a "
                        "change known to touch a few questions, its rows to be read over an "
                        "earlier report's; the report holds those records only")
    parser.add_argument("--out", required=True)
    parser.add_argument("--continue", dest="continue_", action="store_true",
                        help="keep the rows of an earlier, stopped report at --out and resume "
                             "only the records it has no row for")
    args = parser.parse_args(argv)
    manifest = _manifest(args.results)
    examples = args.examples or manifest.get("examples")
    ask_path = args.ask_db or manifest.get("ask_db")
    if ask_path and not Path(ask_path).is_file():
        raise SystemExit(f"the folder was asked on {ask_path}, which is not there: build it "
                         "again (bench/merge_spider.py) and name it with --ask-db")
    try:
        overrides = parse_params(pipeline, args.param)
        services = example_services(examples)
    except UsageError as exc:
        raise SystemExit(str(exc)) from None
    print(f"example bank: {'none' if not services else len(services['examples'])} examples",
          flush=True)

    results_file = Path(args.results) / "results.jsonl"
    if not results_file.is_file():
        raise SystemExit(f"--results: no results.jsonl in {args.results}")
    records = chosen_records(ResultsFile(results_file).read(), pipeline.name, args.questions)
    # the load beside the measurement is in its sittings (one per invocation)
    settings = {"machine": machine_info(), "results": args.results, "pipeline": pipeline.name,
                "params": overrides, "examples": examples, "records": len(records),
                **({"ask_db": ask_path} if ask_path else {}),
                **({"only": sorted(set(args.questions))} if args.questions else {})}
    out = Path(args.out)
    if args.continue_:
        earlier = earlier_report(out, settings)
    elif out.exists():
        raise SystemExit(f"{out} exists: --continue carries that measurement on; to start "
                         "again, remove it or choose another --out")
    else:
        earlier = {"rows": [], "sittings": []}
    if {r["question_id"] for r in earlier["rows"]} >= {r["question_id"] for r in records}:
        print(f"nothing to do: {out} has a row for every record")
        return 0
    llm = make_client(load_settings(provider="local", cache=False))
    pool, options = DatabasePool(), EvalOptions()

    def resume_one(record: dict) -> dict:
        db_path = str(Path(args.data) / "database" / record["db_id"]
                      / f"{record['db_id']}.sqlite")
        return resume_record(record, pipeline, find, describe, db_path, overrides, pool, llm,
                             options, services, ask_path)

    report, status = measure(records, resume_one, out, settings, earlier)
    print(json.dumps({k: v for k, v in report.items() if k != "rows"}, indent=1))
    return status
