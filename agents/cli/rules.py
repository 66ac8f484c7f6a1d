"""``python -m agents rules``: the declared post-hoc rules (:mod:`agents.rules.registry`), with
the pipelines that use each; ``docs/rules.md`` holds the same table."""

from __future__ import annotations

import argparse

from agents.pipelines import list_pipelines
from agents.rules.registry import rules_table


def register(sub) -> None:
    p = sub.add_parser("rules", help="list the SQL rules around the agents (Markdown table)",
                       description="Print every declared post-hoc rule: its kind, the hook "
                                   "where it acts, its switch, where it comes from, the "
                                   "pipelines that use it and where it was measured.")
    p.set_defaults(func=cmd_rules)


def cmd_rules(args: argparse.Namespace) -> int:
    print(rules_table(list_pipelines()))
    return 0
