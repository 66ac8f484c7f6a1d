"""``python -m agents compare``: several pipelines on one question, and whose results agree."""

from __future__ import annotations

import argparse
import json
from typing import Sequence

from agents.cli.options import (CLIError, UsageError, add_question_options, check_question,
    coerce_param, example_services, exec_limits, make_llm, open_db, pick_pipeline, split_pair)
from agents.core.engine import Pipeline
from agents.core.events import StepEvent
from agents.outputs.common import indent
from agents.db.sqltext import format_sql, result_text, text_table
from agents.runs.compare import compare


def register(sub) -> None:
    p = sub.add_parser("compare", help="run several pipelines on one question and compare",
                       description="Run each pipeline on the same question; show whose "
                                   "results agree.")
    p.add_argument("--pipelines", default="baseline,macsql", metavar="A,B,...",
                   help="comma-separated pipeline names (default: baseline,macsql)")
    add_question_options(p, param_metavar="[PIPELINE.]NAME=VALUE",
                         param_help="parameter for one pipeline (PIPELINE.NAME=VALUE) or for "
                                    "every pipeline that has it (NAME=VALUE); repeatable",
                         json_help="print the comparison as JSON", max_rows=5,
                         max_rows_help="result rows to show per pipeline")
    p.set_defaults(func=cmd_compare)


def cmd_compare(args: argparse.Namespace) -> int:
    question = check_question(args.question)
    names = [n.strip() for n in args.pipelines.split(",") if n.strip()]
    if not names:
        raise UsageError("--pipelines is empty")
    pipelines = [pick_pipeline(n) for n in dict.fromkeys(names)]
    params = compare_params(pipelines, args.param)
    limits = exec_limits(args)
    db = open_db(args.db)
    llm = make_llm(args)

    def show(name: str, item) -> None:
        if isinstance(item, StepEvent) and not args.json:
            state = {"ok": "done", "skipped": "skipped", "error": "FAILED"}[item.status]
            detail = f": {item.error}" if item.error else ""
            print(f"[{name}] {item.agent} {state} ({item.seconds:.1f} s){detail}", flush=True)

    result = compare(pipelines, question, db, llm, evidence=args.evidence,
                     params_by_pipeline=params, on_item=show, limits=limits,
                     services=example_services(args, db))
    if args.json:
        print(json.dumps(result.to_dict(), indent=2, ensure_ascii=False, default=str))
    else:
        print_comparison(result, args.max_rows)
    if not any(o.result_ok for o in result.outcomes):
        raise CLIError("no pipeline produced a result")
    return 0


def compare_params(pipelines: list[Pipeline], pairs: Sequence[str]) -> dict[str, dict]:
    by_name = {p.name: p for p in pipelines}
    params: dict[str, dict] = {p.name: {} for p in pipelines}
    for pair in pairs:
        name, value = split_pair(pair)
        target, dot, key = name.partition(".")
        if dot and target in by_name:
            params[target][key] = coerce_param(by_name[target], key, value)
            continue
        if dot:
            raise UsageError(f"--param {pair!r}: {target!r} is not one of the compared "
                             f"pipelines ({', '.join(by_name)})")
        owners = [p for p in pipelines if any(s.name == name for s in p.params)]
        if not owners:
            raise UsageError(f"no compared pipeline has a parameter {name!r}")
        for p in owners:
            params[p.name][name] = coerce_param(p, name, value)
    return params


def print_comparison(result, max_rows: int) -> None:
    header = ["pipeline", "status", "rows", "calls", "tokens", "seconds", "agrees with"]
    table = []
    for o in result.outcomes:
        rows = str(o.result.get("row_count")) if o.result_ok else "-"
        mates = [n for n in (result.groups[o.group] if o.group is not None else [])
                 if n != o.pipeline]
        table.append([o.pipeline, o.status if o.result_ok or o.status != "done" else "sql error",
                      rows, str(o.calls), f"{o.prompt_tokens}+{o.completion_tokens}",
                      f"{o.seconds:.1f}", ", ".join(mates) or "-"])
    print("")
    print(text_table(header, table))
    for o in result.outcomes:
        print(f"\n== {o.pipeline} ==")
        if o.final_sql:
            print(indent(format_sql(o.final_sql), 2))
        if o.result_ok:
            print(indent(result_text(o.result, max_rows), 2))
        elif o.result:
            print(f"  the SQL failed: {o.result.get('error')}")
        if o.error:
            print(f"  error: {o.error}")
    print("")
    if result.all_agree:
        print("Agreement: all pipelines return the same result.")
    elif result.groups:
        groups = " | ".join("{" + ", ".join(g) + "}" for g in result.groups)
        print(f"Agreement groups: {groups}")
    else:
        print("Agreement: no pipeline produced a result.")


# -- model ----------------------------------------------------------------------------------------
