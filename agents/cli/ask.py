"""``python -m agents ask``, ``schema`` and ``model``: one question streamed step by step, a
database's schema as the agents see it, and the embedded model's preparation."""

from __future__ import annotations

import argparse
import json
import sys
import threading

from agents.cli.context import add_context_options, context_for, context_lines
from agents.cli.options import (CLIError, add_db_option, add_question_options, check_question,
    example_services, exec_limits, make_llm, missing_action, open_db, parse_params, pick_pipeline)
from agents.core.engine import RunControl, start_run
from agents.core.events import RunFinished, StepEvent, StepStarted
from agents.runs.draft import is_draft
from agents.llm import local_model
from agents.runs.result_summary import with_summary
from agents.runs.textview import LiveText, render_event, render_outcome
from agents.db.sqltext import format_sql, result_text
from agents.outputs.common import indent


def register(sub) -> None:
    for add in (_register_ask, _register_schema, _register_model):
        add(sub)


def _register_ask(sub) -> None:
    p = sub.add_parser("ask", help="answer a question about a database, showing every agent step",
                       description="Run a pipeline on one question and stream its agent steps.")
    p.add_argument("--pipeline", default="macsql", help="pipeline name (default: macsql)")
    add_question_options(p, param_metavar="NAME=VALUE", param_help="pipeline parameter "
                         "(repeatable)", json_help="print the whole run trace as JSON",
                         max_rows=20, max_rows_help="result rows to show")
    p.add_argument("--no-stream", action="store_true",
                   help="do not print the model's output as it is written, only each finished "
                        "step")
    add_context_options(p)
    p.set_defaults(func=cmd_ask)


def cmd_ask(args: argparse.Namespace) -> int:
    question = check_question(args.question)
    pipeline = pick_pipeline(args.pipeline)
    params = parse_params(pipeline, args.param)
    limits = exec_limits(args)
    db = open_db(args.db)
    context = context_for(args, db)
    llm = make_llm(args)
    out = sys.stdout
    run = None
    control = RunControl(threading.Event())
    cancel = control.cancel
    live = None if (args.json or args.no_stream) else LiveText(out)
    if not args.json:
        for line in context_lines(context):
            print(line, file=out)
    items = start_run(pipeline, question, db, llm, evidence=context.evidence(), params=params,
                      limits=limits, control=control, services=example_services(args, db),
                      on_partial=live, context=context.to_dict())
    if args.summary:
        items = with_summary(items, llm, control)
    try:
        for item in items:
            if live is not None:
                live.end()
            if isinstance(item, RunFinished):
                run = item.run
            elif not args.json:
                _print_item(item, out)
    except KeyboardInterrupt:
        cancel.set()
        raise
    assert run is not None
    if args.json:
        print(json.dumps(run.to_dict(), indent=2, ensure_ascii=False, default=str), file=out)
    else:
        _print_outcome(run, args.max_rows, out)
    return _run_exit(run)


def _run_exit(run) -> int:
    if run.status != "done":
        raise CLIError(run.error or f"the run {run.status}")
    if (run.review or {}).get("answerable") is False:
        return 0  # its statement is the answer, printed above
    if run.result and not run.result.get("ok"):
        raise CLIError(f"the final SQL failed: {run.result.get('error')}")
    if not run.final_sql:
        raise CLIError("the pipeline produced no SQL")
    return 0


def _print_item(item, out) -> None:
    if isinstance(item, StepStarted):
        title = f" - {item.title}" if item.title else ""
        print(f"\n[{item.index + 1}] {item.agent}{title} ...", file=out, flush=True)
    elif isinstance(item, StepEvent):
        for line in render_event(item):
            print(line, file=out)
        if is_draft(item):  # the answer so far, while the other candidates check it
            print("\n".join(["", "Draft answer (being checked):",
                              indent(format_sql(item.sql or ""), 2)]
                             + ([result_text(item.execution, 5)] if item.execution else [])),
                  file=out)
        out.flush()


def _print_outcome(run, max_rows: int, out) -> None:
    print("\n".join(render_outcome(run, max_rows)), file=out)


# -- schema ---------------------------------------------------------------------------------------
def _register_schema(sub) -> None:
    p = sub.add_parser("schema", help="print a database's schema as the agents see it")
    add_db_option(p)
    p.add_argument("--format", choices=["macsql", "ddl"], default="macsql",
                   help="macsql: column lists with value examples; ddl: CREATE TABLE text")
    p.set_defaults(func=cmd_schema)


def cmd_schema(args: argparse.Namespace) -> int:
    schema = open_db(args.db).schema
    if args.format == "ddl":
        print(schema.render_ddl().strip())
        return 0
    print(schema.render_macsql().strip())
    foreign_keys = schema.render_foreign_keys().strip()
    if foreign_keys:
        print("[Foreign keys]")
        print(foreign_keys)
    return 0


# -- model ----------------------------------------------------------------------------------------
def _register_model(sub) -> None:
    p = sub.add_parser("model", help="manage the embedded model")
    actions = p.add_subparsers(title="actions", metavar="ACTION")
    prepare = actions.add_parser("prepare", help="assemble and verify the embedded model")
    prepare.add_argument("--fast", action="store_true",
                         help="the smaller 0.5B variant instead of the 1.5B model")
    prepare.set_defaults(func=cmd_model_prepare)
    p.set_defaults(func=lambda args: missing_action(p))


def cmd_model_prepare(args: argparse.Namespace) -> int:
    return local_model.prepare_main(["--fast"] if args.fast else [])
