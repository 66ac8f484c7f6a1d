"""``python -m agents run export RUN_ID``: one stored run as a Markdown or HTML report.

The report is the one the History page offers under "Export this run" (see
:mod:`agents.runs.run_report`): every step with its SQL and result preview, any edit as a diff, the
final and accepted answers and the annotation.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from agents.cli.options import CLIError, missing_action
from agents.runs.run_report import FORMATS, stored_run_report
from agents.store import Store, StoreError, default_path


def register(sub) -> None:
    p = sub.add_parser("run", help="work with a stored run (export it as a report)")
    actions = p.add_subparsers(title="actions", metavar="ACTION")
    export = actions.add_parser(
        "export", help="write a stored run as a Markdown or HTML report",
        description="Write one stored run (see the History page for run ids) as a readable "
                    "report: every step, its SQL and result preview, edits, the accepted answer "
                    "and the annotation.")
    export.add_argument("run_id", help="the run's id, as History and the exports show it")
    export.add_argument("--format", choices=FORMATS, default="md",
                        help="md (Markdown, the default) or html (a standalone page)")
    export.add_argument("--out", metavar="FILE", help="write to FILE instead of standard output")
    export.add_argument("--store", metavar="FILE",
                        help="the run store file (default: the studio's own store)")
    export.set_defaults(func=cmd_run_export)
    p.set_defaults(func=lambda args: missing_action(p))


def cmd_run_export(args: argparse.Namespace) -> int:

    path = Path(args.store) if args.store else default_path()
    if not path.is_file():
        raise CLIError(f"there is no run store at {path}")
    try:
        with Store(path) as store:
            text = stored_run_report(store, args.run_id.strip(), args.format)
    except (LookupError, StoreError) as exc:
        raise CLIError(str(exc)) from exc
    if args.out:
        try:
            Path(args.out).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise CLIError(f"cannot write {args.out}: {exc.strerror or exc}") from exc
        print(f"wrote {args.out}")
    else:
        print(text, end="")
    return 0
