"""Each user's own settings: the choices made on the Settings page, kept across reloads.

A browser reload starts a new session, so settings kept only in the session are lost with it.
Here they are kept per user: the signed-in user in team mode, one fixed local user otherwise.
Only the keys in :data:`KEYS` (and one ``pipeline.<name>`` key per pipeline) are kept, so a
stale or mistyped key never comes back; and nothing that looks like a secret (an API key, a
password, a URL with credentials) is ever written, so the store file can be copied or shared
without handing out a key.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

from .access import Viewer, viewer_or_local
from .connection import StoreConnection
from .schema import iso_utc

# The user whose preferences local mode keeps: not a valid username (see agents.core.team),
# so a team account can never read or overwrite it.
LOCAL_USER = "(local)"

# What a user may keep: the Ask page's default pipeline and summary switch, the model choice
# (never its key) and the query limits; each pipeline's parameter defaults under PIPELINE.
KEYS = ("ask_pipeline", "ask_summary", "llm", "exec_limits")
PIPELINE = "pipeline."

# Parts of a name that mark its value as a secret, never written whatever the key it is under.
SECRET_MARKERS = ("api_key", "apikey", "password", "passwd", "secret", "access_token",
                  "authorization")


def preference_user(viewer: Viewer | None) -> str:
    """The user name preferences are kept under: the signed-in user in team mode (empty while
    nobody is signed in), :data:`LOCAL_USER` in local mode."""
    viewer = viewer_or_local(viewer)
    return viewer.user if viewer.team else LOCAL_USER


def is_known(key: object) -> bool:
    """Whether ``key`` is one the studio keeps (``pipeline.`` keys name a pipeline)."""
    if not isinstance(key, str):
        return False
    if key.startswith(PIPELINE):
        return key[len(PIPELINE):].isidentifier()
    return key in KEYS


def is_secret(name: object) -> bool:
    """Whether a key or field called ``name`` holds a secret (``api_key``, ``password`` …)."""
    text = str(name).lower().replace("-", "_")
    return any(marker in text for marker in SECRET_MARKERS)


def _has_credentials(text: str) -> bool:
    """Whether ``text`` is a URL carrying a user name or password (``https://u:p@host``)."""
    if "://" not in text or "@" not in text:
        return False
    try:
        parts = urlsplit(text.strip())
    except ValueError:
        return True  # unreadable: treated as a secret rather than written
    return bool(parts.username or parts.password)


def without_secrets(value: Any) -> Any:
    """``value`` with every secret field left out, at any depth; a string that is a URL with
    credentials becomes None."""
    if isinstance(value, dict):
        return {k: without_secrets(v) for k, v in value.items() if not is_secret(k)}
    if isinstance(value, (list, tuple)):
        return [without_secrets(v) for v in value]
    if isinstance(value, str) and _has_credentials(value):
        return None
    return value


def _kept(values: dict[str, Any]) -> dict[str, Any]:
    """The known, non-secret part of ``values``, as it will be written."""
    return {k: without_secrets(v) for k, v in values.items() if is_known(k) and not is_secret(k)}


class PreferencesPart(StoreConnection):
    """The preference methods of :class:`~agents.store.Store`."""

    def preferences(self, *, viewer: Viewer | None = None) -> dict[str, Any]:
        """The preferences saved for ``viewer`` (keys no longer known, and values that cannot
        be read, are left out)."""
        user = preference_user(viewer)
        if not user:
            return {}
        with self._lock:
            rows = self.db.execute("SELECT key, value_json FROM user_preferences WHERE user = ?",
                                   [user]).fetchall()
        saved: dict[str, Any] = {}
        for key, text in rows:
            try:
                value = json.loads(text)
            except (TypeError, ValueError):
                continue
            saved[key] = value
        return _kept(saved)

    def save_preferences(self, values: dict[str, Any], *,
                         viewer: Viewer | None = None) -> dict[str, Any]:
        """Keep ``values`` for ``viewer``, each key replacing what was saved under it (None
        forgets it: the studio's default applies again). Unknown keys and secrets are not
        written; returns what was. Raises ``ValueError`` while nobody is signed in, and
        :class:`~agents.store.connection.StoreError` when the store cannot be written."""
        user = preference_user(viewer)
        if not user:
            raise ValueError("sign in first: preferences are kept per user")
        kept = _kept(values)
        stamp = iso_utc(None)
        with self._write() as db:
            for key, value in kept.items():
                if value is None:
                    db.execute("DELETE FROM user_preferences WHERE user = ? AND key = ?",
                               [user, key])
                    continue
                db["user_preferences"].upsert({"user": user, "key": key,
                                               "value_json": json.dumps(value),
                                               "updated_at": stamp}, pk=("user", "key"))
        return kept
