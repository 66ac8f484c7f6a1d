"""``python -m agents eval``: benchmark pipelines on a Spider-format dataset.

The CLI plugs this in with :func:`register`; everything the command does lives in the evaluation
package, so the Benchmark page and tests use the same code. Output goes to one folder:
``results.jsonl`` (one line per question and pipeline, written as it goes), ``report.json`` and
``report.md``, and ``manifest.json`` (what was evaluated, checked when the folder is reused so a
resumed evaluation never mixes answers from different models or scoring rules).
"""

from __future__ import annotations

import argparse
import json
from datetime import datetime
from pathlib import Path

from agents.cli.options import CLIError, UsageError, add_llm_options
from agents.core.config import SettingsError, load_settings
from agents.core.engine import ExecLimits
from agents.core.paths import REPO_ROOT
from agents.llm.client import LLMError, make_client
from ..example_bank import ExampleBank, ExampleBankError
from ..pipelines import get_pipeline, names
from ..store import Store, StoreError
from .dataset import SAMPLE_MODES, DatasetError, load_dataset, sample_questions
from .exclusion import describe_exclusion, exclusion_of
from .harness import EvalOptions, EvaluationAborted, run_evaluation
from .manifest import check_manifest, recorded_params
from .report import read_report, render_markdown, run_metadata, write_report
from .sittings import Sitting, read_sittings, record_sitting

def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``eval`` sub-command; its handler is stored as the ``func`` default."""
    p = subparsers.add_parser(
        "eval", help="measure execution accuracy of pipelines on a Spider-format dataset",
        description="Run pipelines over the questions of a Spider-format dataset folder "
                    "(dev.json, tables.json, database/<db_id>/<db_id>.sqlite), score each "
                    "answer by execution accuracy (test-suite semantics) and write a results "
                    "file and a report. Re-running with the same --out continues where it "
                    "stopped.")
    p.add_argument("--data", required=True, help="dataset folder (or its questions JSON file)")
    p.add_argument("--pipelines", required=True,
                   help="comma-separated pipeline names, or 'all'")
    p.add_argument("--limit", type=_non_negative_int, default=None,
                   help="evaluate this many questions (default: all)")
    p.add_argument("--sample", choices=SAMPLE_MODES, default="stratified",
                   help="how --limit picks questions (default: stratified by hardness)")
    p.add_argument("--seed", type=int, default=0, help="seed of the sample (default 0)")
    p.add_argument("--exclude-sample", action="append", default=[],
                   metavar="[MODE:]SEED:LIMIT",
                   help="leave out the questions of that sample (MODE defaults to --sample), "
                        "e.g. 7:100 to draw a second sample disjoint from the seed-7 one "
                        "(repeatable)")
    p.add_argument("--exclude-quoted", action="store_true",
                   help="leave out the questions a pipeline prompt quotes (near-)verbatim, "
                        "from this sample and from every --exclude-sample")
    p.add_argument("--workers", type=_positive_int, default=1,
                   help="questions run in parallel (remote endpoints only; default 1)")
    p.add_argument("--out", default=None,
                   help="output folder (default: bench/runs/eval-<date>-<time>)")
    p.add_argument("--examples", default=None,
                   help="Spider train.json used as the few-shot example bank")
    p.add_argument("--save-runs", action="store_true",
                   help="also save every run into the run store (History page)")
    p.add_argument("--param", action="append", default=[], metavar="PIPELINE.NAME=VALUE",
                   help="set a pipeline parameter, e.g. macsql.max_refine=2 (repeatable)")
    p.add_argument("--exec-timeout", type=_positive_float, default=30.0,
                   help="seconds allowed per scoring query (default 30)")
    p.add_argument("--max-rows", type=_positive_int, default=100_000,
                   help="row cap of scoring queries; capped results are flagged (default 100000)")
    p.add_argument("--keep-distinct", action="store_true",
                   help="compare with DISTINCT kept (the official script removes it by default)")
    p.add_argument("--ask-db", default=None, metavar="SQLITE",
                   help="ask every question against this database (e.g. Spider's dev databases "
                        "merged into one, built by bench/merge_spider.py) instead of its own; "
                        "the gold SQL still runs on the question's own database")
    p.add_argument("--no-answer-checks", action="store_true",
                   help="skip the answerability check before the first step (a model 'no' "
                        "ends a run without SQL, scored wrong)")
    p.add_argument("--no-error-hints", action="store_true",
                   help="show repair agents SQLite's bare error, without the hint naming the "
                        "real tables and columns or SQLite's way of writing a function it "
                        "lacks (to measure what the hint is worth)")
    add_llm_options(p)
    p.set_defaults(func=main)
    return p


def main(args: argparse.Namespace) -> int:
    """Run the evaluation described by ``args``; returns the process exit code.

    Usage mistakes raise :class:`~agents.cli.options.UsageError`, which the CLI prints as one line.
    """
    try:
        dataset = load_dataset(args.data)
    except DatasetError as exc:
        raise UsageError(str(exc)) from None
    wanted = names() if args.pipelines.strip() == "all" else \
        [n.strip() for n in args.pipelines.split(",") if n.strip()]
    if not wanted:
        raise UsageError("--pipelines is empty")
    try:
        pipelines = [get_pipeline(n) for n in dict.fromkeys(wanted)]
    except KeyError as exc:
        raise UsageError(exc.args[0]) from None
    params = _parse_params(args.param, pipelines)
    if args.ask_db and not Path(args.ask_db).is_file():
        raise UsageError(f"--ask-db: no database file at {args.ask_db}")
    try:
        settings = load_settings(provider=args.provider, base_url=args.base_url,
                                 model=args.model, temperature=args.temperature,
                                 cache=False if args.no_cache else None)
    except SettingsError as exc:
        raise UsageError(str(exc)) from None

    notes = []
    workers = args.workers
    if settings.provider == "local" and workers > 1:
        workers = 1
        notes.append("workers forced to 1: the embedded model serves one request at a time")
        print(f"note: {notes[-1]}")
    services = {}
    if args.examples:
        services["examples"] = load_example_bank(args.examples)

    exclusion = exclusion_of(dataset, args)
    questions = sample_questions(dataset.questions, args.limit, args.sample, args.seed,
                                 exclude=exclusion["question_ids"])
    out = Path(args.out) if args.out else \
        REPO_ROOT / "bench" / "runs" / f"eval-{datetime.now():%Y%m%d-%H%M%S}"
    missing = dataset.missing_by_db()
    print(f"dataset: {dataset.root} -- {dataset.total} questions; "
          f"{len(dataset.missing)} skipped, database missing "
          f"({', '.join(f'{db}: {n}' for db, n in missing.items()) or 'none'})")
    print(f"sample: {len(questions)} of {len(dataset.questions)} executable questions "
          f"({args.sample}, seed {args.seed}); pipelines: {', '.join(p.name for p in pipelines)}")
    if exclusion["question_ids"]:
        print(f"excluded: {describe_exclusion(exclusion)}")
    print(f"output: {out}", flush=True)

    try:
        llm = make_client(settings)
    except LLMError as exc:
        raise CLIError(f"the model is not available: {exc}") from None
    model = llm.model or settings.resolved_model() or settings.describe()
    manifest = {"dataset": str(Path(dataset.root).resolve()), "sample_mode": args.sample,
                "seed": args.seed, "keep_distinct": args.keep_distinct, "model": model,
                "error_hints": not args.no_error_hints,
                "answer_checks": not args.no_answer_checks,
                "sample_seed": settings.sample_seed,
                "examples": str(Path(args.examples).expanduser().resolve()) if args.examples
                else None,
                "params": recorded_params(params, pipelines),
                "exclude_samples": exclusion["samples"], "exclude_quoted": args.exclude_quoted,
                "excluded_ids": exclusion["question_ids"],
                "ask_db": str(Path(args.ask_db).resolve()) if args.ask_db else None}
    check_manifest(out, manifest)

    store = _store() if args.save_runs else None
    options = EvalOptions(exec_timeout=args.exec_timeout, max_rows=args.max_rows,
                          keep_distinct=args.keep_distinct, workers=workers, params=params,
                          step_limits=ExecLimits(hints=not args.no_error_hints),
                          answer_checks=not args.no_answer_checks,
                          ask_db=str(Path(args.ask_db).resolve()) if args.ask_db else None)

    sitting = Sitting()

    def on_record(record, run):
        sitting.count_result()
        if store is not None and run is not None:
            store.save_run(run, source="eval")

    details = {
        "dataset": {"name": dataset.name, "root": dataset.root, "total": dataset.total,
                    "executable": len(dataset.questions), "missing_by_db": missing,
                    "hardness": dataset.hardness_counts()},
        "sample": {"mode": args.sample, "seed": args.seed, "limit": args.limit,
                   "size": len(questions), "question_ids": [q.qid for q in questions],
                   "excluded": exclusion},
        "settings": {
            "pipelines": ", ".join(p.name for p in pipelines),
            "model endpoint": settings.describe(),
            "temperature": settings.temperature,
            "max tokens": settings.max_tokens,
            "json mode": settings.json_mode,
            "response cache": "on" if settings.cache else "off",
            "workers": workers,
            "scoring": ("DISTINCT kept" if args.keep_distinct else
                        "DISTINCT removed before execution (official default)"),
            "scoring query timeout (s)": args.exec_timeout,
            "scoring row cap": args.max_rows,
            "pipeline query limits": f"{options.step_limits.timeout:g} s, "
                                     f"{options.step_limits.max_rows} rows",
            "name-error hints": "on" if options.step_limits.hints else "off",
            "pipeline parameters": json.dumps(params) if params else "defaults",
            "few-shot examples": args.examples or "none",
            "excluded from the sample": describe_exclusion(exclusion) or "none",
        },
        # notes written into the folder's report by hand (what shared the CPU, what the run
        # is compared with) stay when the evaluation is resumed and the report rewritten
        "notes": list(dict.fromkeys([*_earlier_notes(out), *notes])),
    }
    status, ended = 0, {"ended_as": "failed"}   # until the evaluation returns or stops

    def write_down() -> dict:
        """The sitting and the report, however the evaluation ended: a report never lags
        behind the results file, and a sitting that cannot be recorded only says so."""
        problem = record_sitting(out, sitting.finish(**ended))
        if problem:
            print(f"note: {problem}")
        return write_report(out, run_metadata(model=llm.model or model, **details,
                                              sittings=read_sittings(out)))

    try:
        outcome = run_evaluation(questions, pipelines, llm, out, options, services=services,
                                 on_record=on_record)
        ended = {"ended_as": "done", "held_back": outcome.held_back}
        print(f"done: {outcome.written} new, {outcome.already_done} already in the results file")
        if outcome.held_back:
            print(f"{outcome.held_back} items whose model call failed were not recorded; "
                  f"re-run with --out {out} to retry them")
    except EvaluationAborted as exc:
        print(f"stopped: {exc}")
        status, ended = 1, {"ended_as": "stopped"}
    except KeyboardInterrupt:
        print(f"\ninterrupted; re-run with --out {out} to continue")
        status, ended = 130, {"ended_as": "interrupted"}
    except BaseException:
        try:              # the results so far stay summarized ...
            write_down()
        except Exception:  # ... if they can be: the error to report is the first one
            pass
        raise
    finally:
        if store is not None:
            store.close()
    report = write_down()
    print()
    print(render_markdown(report))
    print(f"results: {out / 'results.jsonl'}\nreport: {out / 'report.md'}")
    return status


def _earlier_notes(out: Path) -> list[str]:
    notes = (read_report(out) or {}).get("notes")
    return [n for n in notes if isinstance(n, str)] if isinstance(notes, list) else []


def _parse_params(items: list[str], pipelines) -> dict[str, dict]:
    """``PIPELINE.NAME=VALUE`` strings to validated per-pipeline overrides."""
    by_name = {p.name: p for p in pipelines}
    params: dict[str, dict] = {}
    for item in items:
        key, sep, value = item.partition("=")
        name, dot, param = key.strip().partition(".")
        if not sep or not dot or not param:
            raise UsageError(f"--param {item!r}: expected PIPELINE.NAME=VALUE")
        if name not in by_name:
            raise UsageError(f"--param {item!r}: {name!r} is not among the evaluated pipelines")
        params.setdefault(name, {})[param] = value.strip()
    for name, values in params.items():
        try:
            params[name] = by_name[name].resolve_params(values)
        except ValueError as exc:
            raise UsageError(f"--param: {exc}") from None
    return params


def load_example_bank(path: str):
    """The Spider-format example bank at ``path`` (with its tables.json when beside it)."""
    tables = Path(path).expanduser().parent / "tables.json"
    try:
        return ExampleBank.from_spider_json(path, tables_json=tables if tables.is_file() else None)
    except (ExampleBankError, OSError) as exc:
        raise UsageError(f"--examples: {exc}") from None


def _store():
    try:
        return Store()
    except StoreError as exc:
        raise CLIError(str(exc)) from None


def _non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError("must be 0 or more")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError("must be a positive number")
    return value


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value

