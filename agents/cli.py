"""``python -m agents``: ask a question, print a schema, compare pipelines, prepare the model.

Every expected failure -- a missing or broken database, an empty question, an unreachable model,
an unknown pipeline or parameter -- ends with one line on stderr starting ``error:`` and a
non-zero exit status (2 for a usage mistake, 1 for a failure at run time), never a traceback:
the command line is a user interface too.

Further subcommands plug in without this file knowing them: each module named in
:data:`COMMAND_MODULES` provides ``register(subparsers)``, adds its parser there and sets
``func=handler`` with ``handler(args) -> exit status``. Handlers may use :func:`add_llm_options`,
:func:`make_llm`, :func:`open_db` and raise :class:`CLIError`/:class:`UsageError`. A module
that is not installed is skipped.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import threading
from typing import Any, Sequence

from .cli_context import add_context_options, context_for, context_lines
from .engine import ExecLimits, Pipeline, RunControl, start_run
from .result_summary import with_summary
from .events import RunFinished, StepEvent, StepStarted
from .textview import LiveText, TerminalSafe, render_event, render_outcome, terminal_text

PROG = "python -m agents"
MAX_QUESTION_CHARS = 20_000
COMMAND_MODULES = ["agents.cli_compare", "agents.cli_graph", "agents.cli_runs",
                   "agents.evaluation.command"]
CELL_WIDTH = 40


class CLIError(Exception):
    """A failure the user can act on; ``str()`` is the whole message."""

    exit_code = 1


class UsageError(CLIError):
    """The command line itself is wrong."""

    exit_code = 2


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage mistake is one ``error:`` line instead of a usage dump."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{message} (see: {self.prog} --help)")


# -- entry point --------------------------------------------------------------------------------
def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; names and model text printed never drive the terminal."""
    stdout = sys.stdout
    sys.stdout = stdout if isinstance(stdout, TerminalSafe) else TerminalSafe(stdout)
    try:
        return _main(argv)
    finally:
        sys.stdout = stdout


def _main(argv: Sequence[str] | None) -> int:
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        if getattr(args, "func", None) is None:
            parser.print_help()
            return 2
        return int(args.func(args) or 0)
    except CLIError as exc:
        return _fail(str(exc), exc.exit_code)
    except KeyboardInterrupt:
        return _fail("interrupted", 130)
    except BrokenPipeError:  # e.g. piped into `head`
        return 1
    except Exception as exc:  # noqa: BLE001 -- the last guard: one line, no traceback
        message = str(exc) or exc.__class__.__name__
        if not _is_user_facing(exc):
            message = f"{exc.__class__.__name__}: {message}"
        return _fail(message, 1)


def _fail(message: str, code: int) -> int:
    print(terminal_text(f"error: {' '.join(message.split())}"), file=sys.stderr)
    return code


def _is_user_facing(exc: Exception) -> bool:
    """Errors whose message is written for the user (database, model, settings layers)."""
    names = {cls.__name__ for cls in type(exc).__mro__}
    return bool(names & {"DatabaseError", "LLMError", "SettingsError", "LocalModelError",
                         "UnsafeSQLError"})


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=PROG, description="Text-to-SQL Agent Studio from the command line.")
    sub = parser.add_subparsers(title="commands", metavar="COMMAND")
    for register in (_register_ask, _register_schema, _register_model):
        register(sub)
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name and (name == exc.name or name.startswith(exc.name + ".")):
                continue  # that command is not installed
            raise
        module.register(sub)
    return parser


# -- shared options and resources -----------------------------------------------------------------
def add_llm_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("model (defaults from the environment or config file)")
    group.add_argument("--provider", choices=["local", "openai"],
                       help="local: the embedded model; openai: an OpenAI-compatible endpoint")
    group.add_argument("--base-url", help="endpoint URL, e.g. http://127.0.0.1:8080/v1")
    group.add_argument("--model", help="model name sent to the endpoint")
    group.add_argument("--temperature", type=float, help="sampling temperature (0-2)")
    group.add_argument("--no-cache", action="store_true", help="do not use cached answers")


def add_examples_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--examples", metavar="PATH", default=None,
                        help="Spider-format JSON of few-shot examples (e.g. Spider's train.json; "
                             "default: $STUDIO_EXAMPLES); answers accepted in the app for this "
                             "database are always used")


def example_services(args: argparse.Namespace, db) -> dict:
    """The few-shot example bank for a run on ``db`` (used by DEA-SQL and R3)."""
    import os

    from .example_bank import ExampleBankError, bank_for, load_imported
    from .store import Store, StoreError

    path = getattr(args, "examples", None) or os.environ.get("STUDIO_EXAMPLES")
    try:
        imported = load_imported(path) if path else []
    except (ExampleBankError, OSError) as exc:
        raise CLIError(f"the example file {path} could not be loaded: {exc}") from None
    try:
        store = Store()
    except StoreError:
        store = None
    return {"examples": bank_for(db, store, imported)}


def make_llm(args: argparse.Namespace):
    """The LLM client from the settings, with the command-line overrides applied."""
    from .config import load_settings
    from .llm import make_client

    settings = load_settings(provider=args.provider, base_url=args.base_url, model=args.model,
                             temperature=args.temperature,
                             cache=False if args.no_cache else None)
    return make_client(settings)


def add_db_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", required=True, metavar="PATH", help="SQLite database file")


def open_db(path: str):
    from .database import open_database

    return open_database(path)


def check_question(question: str) -> str:
    """The question, stripped; a :class:`UsageError` when it is empty or absurdly long."""
    text = (question or "").strip()
    if not text:
        raise UsageError("the question is empty")
    if len(text) > MAX_QUESTION_CHARS:
        raise UsageError(f"the question is too long ({len(text):,} characters; the limit is "
                         f"{MAX_QUESTION_CHARS:,})")
    return text


def pick_pipeline(name: str) -> Pipeline:
    from .pipelines import get_pipeline

    try:
        return get_pipeline(name)
    except KeyError as exc:
        raise UsageError(exc.args[0]) from None


def parse_params(pipeline: Pipeline, pairs: Sequence[str]) -> dict:
    """``NAME=VALUE`` strings as typed parameter values for ``pipeline``."""
    values: dict[str, Any] = {}
    for pair in pairs:
        name, value = _split_pair(pair)
        values[name] = _coerce_param(pipeline, name, value)
    return values


def _split_pair(pair: str) -> tuple[str, str]:
    name, sep, value = pair.partition("=")
    if not sep or not name.strip():
        raise UsageError(f"--param expects NAME=VALUE, not {pair!r}")
    return name.strip(), value.strip()


def _coerce_param(pipeline: Pipeline, name: str, value: str) -> Any:
    spec = next((p for p in pipeline.params if p.name == name), None)
    if spec is None:
        known = ", ".join(p.name for p in pipeline.params) or "none"
        raise UsageError(f"pipeline {pipeline.name!r} has no parameter {name!r} "
                         f"(its parameters: {known})")
    try:
        return spec.coerce(value)
    except (TypeError, ValueError) as exc:
        if str(exc).startswith(spec.name):
            raise UsageError(f"--param {name}: {exc}") from None
        kind = spec.kind or type(spec.default).__name__
        expected = {"int": "a whole number", "float": "a number"}.get(kind, kind)
        raise UsageError(f"--param {name} must be {expected}, not {value!r}") from None


# -- ask ------------------------------------------------------------------------------------------
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


def add_question_options(p: argparse.ArgumentParser, *, param_metavar: str, param_help: str,
                         json_help: str, max_rows: int, max_rows_help: str) -> None:
    """The options of a command that asks one question: database, question, evidence,
    parameters, output, query time limit, few-shot examples and the model."""
    add_db_option(p)
    p.add_argument("question", help="the question, in natural language")
    p.add_argument("--evidence", default="", help="extra knowledge / hint for the question")
    p.add_argument("--param", action="append", default=[], metavar=param_metavar,
                   help=param_help)
    p.add_argument("--json", action="store_true", help=json_help)
    p.add_argument("--max-rows", type=int, default=max_rows, metavar="N",
                   help=f"{max_rows_help} (default: {max_rows})")
    p.add_argument("--timeout", type=float, default=10.0, metavar="S",
                   help="time limit per SQL query in seconds (default: 10)")
    add_examples_option(p)
    add_llm_options(p)


def cmd_ask(args: argparse.Namespace) -> int:
    question = check_question(args.question)
    pipeline = pick_pipeline(args.pipeline)
    params = parse_params(pipeline, args.param)
    limits = _limits(args)
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


def _limits(args: argparse.Namespace) -> ExecLimits:
    if args.max_rows < 1:
        raise UsageError("--max-rows must be at least 1")
    if args.timeout <= 0:
        raise UsageError("--timeout must be a positive number of seconds")
    return ExecLimits(timeout=args.timeout, max_rows=max(1000, args.max_rows))


def _run_exit(run) -> int:
    if run.status != "done":
        raise CLIError(run.error or f"the run {run.status}")
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


# -- compare --------------------------------------------------------------------------------------
def _register_model(sub) -> None:
    p = sub.add_parser("model", help="manage the embedded model")
    actions = p.add_subparsers(title="actions", metavar="ACTION")
    prepare = actions.add_parser("prepare", help="assemble and verify the embedded model")
    prepare.add_argument("--fast", action="store_true",
                         help="the smaller 0.5B variant instead of the 1.5B model")
    prepare.set_defaults(func=cmd_model_prepare)
    p.set_defaults(func=lambda args: _missing_action(p))


def _missing_action(parser: argparse.ArgumentParser) -> int:
    raise UsageError(f"choose an action (see: {parser.prog} --help)")


def cmd_model_prepare(args: argparse.Namespace) -> int:
    from .local_model import prepare_main

    return prepare_main(["--fast"] if args.fast else [])
