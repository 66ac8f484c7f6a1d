"""``python -m agents users``: who may sign in to a studio started in team mode.

It writes the users file of :mod:`agents.core.team` (bcrypt hashes, never a password in plain
text); a password is read from the terminal without echo, or from stdin with
``--password-stdin`` for scripts.
"""

from __future__ import annotations

import argparse
import getpass
import sys

from agents.cli.options import CLIError
from agents.core import team
from agents.store.access import ANALYST, ROLES


def register(sub) -> None:
    p = sub.add_parser("users", help="add, remove or list who may sign in in team mode",
                       description="Manage the users file of team mode (STUDIO_MODE=team): "
                                   f"{team.users_path()} unless STUDIO_USERS_FILE names one.")
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    add = actions.add_parser("add", help="add a user or change one's password and role")
    add.add_argument("username")
    add.add_argument("--role", choices=ROLES, default=ANALYST, help="what the user may do")
    add.add_argument("--name", default="", help="the name pages show (default: the username)")
    add.add_argument("--password-stdin", action="store_true",
                     help="read the password from the first line of stdin")
    remove = actions.add_parser("remove", help="remove a user")
    remove.add_argument("username")
    actions.add_parser("list", help="list the users and their roles")
    p.set_defaults(func=cmd_users)


def _password(args: argparse.Namespace) -> str:
    if args.password_stdin:
        return sys.stdin.readline().rstrip("\r\n")
    first = getpass.getpass(f"Password for {args.username}: ")
    if getpass.getpass("Again: ") != first:
        raise CLIError("the two passwords differ; nothing was changed")
    return first


def cmd_users(args: argparse.Namespace) -> int:
    try:
        if args.action == "add":
            account = team.add_user(args.username, _password(args), role=args.role,
                                    name=args.name)
            print(f"{account.username} ({account.role}) may sign in; users file: "
                  f"{team.users_path()}")
        elif args.action == "remove":
            if not team.remove_user(args.username):
                raise CLIError(f"there is no user {args.username!r} in {team.users_path()}")
            print(f"{args.username} removed; what they made stays in the store")
        else:
            for account in team.accounts():
                print(f"{account.username}\t{account.role}\t{account.name}")
    except team.TeamError as exc:
        raise CLIError(str(exc)) from None
    return 0
