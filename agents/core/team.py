"""Team mode: who may sign in, with which role, read from one users file the operator keeps.

The studio runs in one of two modes. *Local* (the default) serves one person on localhost with
no sign-in. *Team* (``STUDIO_MODE=team``) requires signing in and records who made what (see
:mod:`agents.store.access`). The users file is the one streamlit-authenticator reads (YAML:
``credentials.usernames.<name>`` with ``name``, ``password`` as a bcrypt hash and ``roles``; a
``cookie`` section with the name, the signing key and the days a sign-in lasts), so the page's
sign-in form is that maintained library's and this module only manages the file:
``python -m agents users add|remove|list`` writes it with hashed passwords and a random key.
A plain-text password in the file is refused rather than silently accepted.
"""

from __future__ import annotations

import os
import secrets
import tempfile
from dataclasses import dataclass
from pathlib import Path

import bcrypt
import yaml

from agents.core.paths import studio_home
from agents.store.access import ADMIN, ROLES

MODES = ("local", "team")
MIN_PASSWORD_CHARS = 8


class TeamError(Exception):
    """The users file cannot be used; the message says what to fix."""


@dataclass(frozen=True)
class Account:
    username: str
    name: str
    role: str


def mode() -> str:
    """``local`` or ``team`` (``STUDIO_MODE``); anything else is an error, not a silent local."""
    value = os.environ.get("STUDIO_MODE", "local").strip().lower() or "local"
    if value not in MODES:
        raise TeamError(f"STUDIO_MODE must be one of {', '.join(MODES)}; got {value!r}")
    return value


def users_path() -> Path:
    """The users file: ``STUDIO_USERS_FILE``, else ``users.yaml`` in the studio's home."""
    raw = os.environ.get("STUDIO_USERS_FILE", "").strip()
    return Path(raw).expanduser() if raw else studio_home() / "users.yaml"


def _is_hash(value: object) -> bool:
    return isinstance(value, str) and value.startswith(("$2a$", "$2b$", "$2y$")) and \
        len(value) == 60


def load_config(path: Path | None = None) -> dict:
    """The users file, checked: at least one user, every password a bcrypt hash, every role
    known, a cookie key. Raises :class:`TeamError` saying what is wrong."""
    path = path or users_path()
    try:
        config = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except FileNotFoundError:
        raise TeamError(f"team mode needs a users file at {path}; create one with "
                        "`python -m agents users add <username> --role admin`") from None
    except (OSError, yaml.YAMLError) as exc:
        raise TeamError(f"the users file {path} cannot be read: {exc}") from None
    users = ((config.get("credentials") or {}).get("usernames") or {}) \
        if isinstance(config, dict) else {}
    if not users:
        raise TeamError(f"the users file {path} names no user; add one with "
                        "`python -m agents users add <username> --role admin`")
    for username, user in users.items():
        if not isinstance(user, dict) or not _is_hash(user.get("password")):
            raise TeamError(f"user {username!r} in {path} has no bcrypt password hash (a "
                            "password is never kept as plain text); set one with "
                            f"`python -m agents users add {username}`")
        roles = user.get("roles") or []
        if not roles or any(role not in ROLES for role in roles):
            raise TeamError(f"user {username!r} in {path} needs a role, one of "
                            f"{', '.join(ROLES)}; got {roles!r}")
    cookie = config.get("cookie") or {}
    if len(str(cookie.get("key") or "")) < 32:
        raise TeamError(f"the users file {path} needs a cookie key of at least 32 characters "
                        "(`python -m agents users add` writes one)")
    return config


def accounts(path: Path | None = None) -> list[Account]:
    users = load_config(path)["credentials"]["usernames"]
    return [Account(u, str(d.get("name") or u), role_of(d.get("roles")))
            for u, d in sorted(users.items())]


def role_of(roles: list | None) -> str:
    """One role from the file's list: admin when it is among them."""
    roles = list(roles or [])
    return ADMIN if ADMIN in roles else (roles[0] if roles else "analyst")


def _read_or_new(path: Path) -> dict:
    if not path.exists():
        return {"credentials": {"usernames": {}},
                "cookie": {"name": "text2sql_studio_auth", "key": secrets.token_hex(32),
                           "expiry_days": 7}}
    config = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    config.setdefault("credentials", {}).setdefault("usernames", {})
    cookie = config.setdefault("cookie", {})
    cookie.setdefault("name", "text2sql_studio_auth")
    cookie.setdefault("expiry_days", 7)
    if len(str(cookie.get("key") or "")) < 32:
        cookie["key"] = secrets.token_hex(32)
    return config


def _write(path: Path, config: dict) -> None:
    """Write the file atomically, readable by its owner only (it holds the cookie key)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temp = tempfile.mkstemp(dir=path.parent, prefix=".users-", suffix=".yaml")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            yaml.safe_dump(config, out, sort_keys=True)
        os.chmod(temp, 0o600)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def add_user(username: str, password: str, *, role: str, name: str = "",
             path: Path | None = None) -> Account:
    """Add a user, or set an existing one's password, role and name."""
    path = path or users_path()
    username = (username or "").strip()
    if not username or not username.replace("_", "").replace("-", "").replace(".", "").isalnum() \
            or username != username.lower():
        # the sign-in form lower-cases what is typed, so an upper-case name could never sign in
        raise TeamError("a username is lower-case letters, digits, '.', '_' or '-'; got "
                        f"{username!r}")
    if role not in ROLES:
        raise TeamError(f"the role must be one of {', '.join(ROLES)}; got {role!r}")
    if len(password or "") < MIN_PASSWORD_CHARS:
        raise TeamError(f"a password needs at least {MIN_PASSWORD_CHARS} characters")
    if password != password.strip():  # the form strips what is typed
        raise TeamError("a password cannot start or end with a space")
    config = _read_or_new(path)
    hashed = bcrypt.hashpw(password.encode("utf-8"), bcrypt.gensalt()).decode("ascii")
    config["credentials"]["usernames"][username] = {
        "name": name.strip() or username, "password": hashed, "roles": [role],
        "email": f"{username}@localhost", "failed_login_attempts": 0, "logged_in": False}
    _write(path, config)
    return Account(username, name.strip() or username, role)


def remove_user(username: str, path: Path | None = None) -> bool:
    path = path or users_path()
    if not path.exists():
        return False
    config = _read_or_new(path)
    if config["credentials"]["usernames"].pop(username, None) is None:
        return False
    _write(path, config)
    return True
