"""What the commands share: their errors, their common options, and the resources those
options open (the database, the model client, the few-shot examples, a pipeline and its
parameters). Every expected failure is a :class:`CLIError` -- one ``error:`` line, no traceback."""

from __future__ import annotations

import argparse
import os
from typing import Any, Sequence

from agents.core.config import load_settings
from agents.core.engine import ExecLimits, Pipeline
from agents.db.database import open_database
from agents.example_bank import ExampleBankError, bank_for, load_imported
from agents.llm.client import make_client
from agents.pipelines import get_pipeline
from agents.store import Store, StoreError

MAX_QUESTION_CHARS = 20_000


class CLIError(Exception):
    """A failure the user can act on; ``str()`` is the whole message."""

    exit_code = 1


class UsageError(CLIError):
    """The command line itself is wrong."""

    exit_code = 2


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
    settings = load_settings(provider=args.provider, base_url=args.base_url, model=args.model,
                             temperature=args.temperature,
                             cache=False if args.no_cache else None)
    return make_client(settings)


def add_db_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", required=True, metavar="PATH", help="SQLite database file")


def open_db(path: str):
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
    try:
        return get_pipeline(name)
    except KeyError as exc:
        raise UsageError(exc.args[0]) from None


def parse_params(pipeline: Pipeline, pairs: Sequence[str]) -> dict:
    """``NAME=VALUE`` strings as typed parameter values for ``pipeline``."""
    values: dict[str, Any] = {}
    for pair in pairs:
        name, value = split_pair(pair)
        values[name] = coerce_param(pipeline, name, value)
    return values


def split_pair(pair: str) -> tuple[str, str]:
    name, sep, value = pair.partition("=")
    if not sep or not name.strip():
        raise UsageError(f"--param expects NAME=VALUE, not {pair!r}")
    return name.strip(), value.strip()


def coerce_param(pipeline: Pipeline, name: str, value: str) -> Any:
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


def exec_limits(args: argparse.Namespace) -> ExecLimits:
    if args.max_rows < 1:
        raise UsageError("--max-rows must be at least 1")
    if args.timeout <= 0:
        raise UsageError("--timeout must be a positive number of seconds")
    return ExecLimits(timeout=args.timeout, max_rows=max(1000, args.max_rows))


def missing_action(parser: argparse.ArgumentParser) -> int:
    raise UsageError(f"choose an action (see: {parser.prog} --help)")
