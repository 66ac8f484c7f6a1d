"""``python -m agents``: ask a question, print a schema, compare pipelines, prepare the model.

Every expected failure -- a missing or broken database, an empty question, an unreachable model,
an unknown pipeline or parameter -- ends with one line on stderr starting ``error:`` and a
non-zero exit status (2 for a usage mistake, 1 for a failure at run time), never a traceback:
the command line is a user interface too.

Each command module in :data:`COMMANDS` provides ``register(subparsers)``, adds its parser there
and sets ``func=handler`` with ``handler(args) -> exit status``. Handlers use the shared options
and resources of :mod:`agents.cli.options` and raise its :class:`CLIError`/:class:`UsageError`.
"""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

from agents.cli import ask, compare, graph, rules, runs, users
from agents.cli.options import CLIError, UsageError
from agents.evaluation import command as evaluation
from agents.runs.textview import TerminalSafe, terminal_text

PROG = "python -m agents"
COMMANDS = (ask, compare, graph, rules, runs, users, evaluation)


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
    for command in COMMANDS:
        command.register(sub)
    return parser
