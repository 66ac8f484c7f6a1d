"""What ``ask`` on the command line gives a run besides its question, as the Ask page does: the
database's enabled knowledge notes from the studio's store (``--no-knowledge`` leaves them
out) and, with ``--follow-up RUN_ID``, a stored run's question, SQL and result. The run then
records it (``Run.context``) and the command prints what was given before the steps."""

from __future__ import annotations

import argparse

from agents.cli.options import CLIError
from agents.runs.conversation import FollowUpError, run_context
from agents.runs.run_context import RunContext
from agents.store import Store, StoreError, default_path


def add_context_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--knowledge", action=argparse.BooleanOptionalAction, default=True,
                   help="give the agents the database's enabled knowledge notes from the "
                        "studio's store, as the app does (default: on)")
    p.add_argument("--follow-up", metavar="RUN_ID", default=None,
                   help="ask this question as a follow-up of a stored run (see History for "
                        "run ids): the run is given that question, its SQL and its result")
    p.add_argument("--summary", action="store_true",
                   help="after the final SQL has run, add a step that answers the question in "
                        "words from the result (one more model call)")


def context_for(args: argparse.Namespace, db) -> RunContext:
    """The context of the run ``args`` asks for; a store or run that cannot be read, or a run
    that cannot be followed up, is one :class:`~agents.cli.options.CLIError`."""
    follow_id = (args.follow_up or "").strip() if args.follow_up is not None else None
    if follow_id == "":
        raise CLIError("--follow-up needs a run id (see the History page)")
    if not args.knowledge and follow_id is None:
        return RunContext(hint=args.evidence or "")
    if follow_id is None and not default_path().exists():
        return RunContext(hint=args.evidence or "")  # no store yet: no notes to give
    try:
        with Store() as store:
            previous = store.get_run(follow_id) if follow_id is not None else None
            if follow_id is not None and previous is None:
                raise CLIError(f"there is no stored run {follow_id!r} to follow up on")
            if previous is not None and previous.db_name != db.name:
                raise CLIError(f"run {follow_id} was on the database {previous.db_name!r}, "
                               f"not {db.name!r}: a follow-up asks about the same database")
            return run_context(store, db.name, args.evidence or "", previous=previous,
                               knowledge=args.knowledge)
    except FollowUpError as exc:
        raise CLIError(f"cannot follow up on run {follow_id}: {exc}") from None
    except StoreError as exc:
        raise CLIError(f"the studio's store could not be read: {exc}") from None


def context_lines(context: RunContext) -> list[str]:
    """What the run was given besides its question, for the terminal ([] when nothing)."""
    lines = []
    if context.follow_up is not None:
        follow = context.follow_up
        lines += [f"Follow-up of run {follow.run_id}: {follow.question}",
                  f"  its {'accepted ' if follow.accepted else ''}SQL: "
                  f"{' '.join(follow.sql.split())}",
                  f"  its result: {follow.summary}"]
        if follow.answer:
            lines.append(f"  its answer in words: {follow.answer}")
    if context.notes:
        lines.append(f"Knowledge notes given ({len(context.notes)}):")
        lines += ["  " + note.line() + (f"  (note by {note.author})" if note.author else "")
                  for note in context.notes]
    if context.left_out:
        lines.append(f"  ({context.left_out} more note(s) left out: the knowledge given to one "
                     "run is limited in length)")
    return lines
