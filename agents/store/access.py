"""Who is looking at the store, and what they may see and change.

Local mode has one user, who sees and changes everything (:data:`LOCAL`, the default of every
store method). In team mode (:mod:`agents.core.team`) each run, accepted answer, knowledge note
and saved database has an owner, the user who made it, and a ``shared`` flag the owner sets: a
user sees their own items and the shared ones, and only the owner or an admin changes or
removes an item. Items made before team mode was turned on have no owner: everyone sees them,
only admins change them.

The rules are written once, here, as the SQL condition the store's queries add
(:meth:`Viewer.visible`) and the check its writes make (:meth:`Viewer.may_change`), so every
list, lookup, export and prompt that reads the store through a :class:`StoreView` sees the same
items.
"""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass
from typing import Any

ADMIN = "admin"
ANALYST = "analyst"
ROLES = (ADMIN, ANALYST)


class NotAllowed(ValueError):
    """A change the viewer may not make (someone else's item); the message says whose it is."""


@dataclass(frozen=True)
class Viewer:
    """The user the store answers for: ``user`` is the signed-in username (empty in local
    mode), ``role`` one of :data:`ROLES`, ``team`` whether ownership applies at all."""

    user: str = ""
    role: str = ADMIN
    team: bool = False

    @property
    def is_admin(self) -> bool:
        return self.role == ADMIN

    @property
    def sees_all(self) -> bool:
        return not self.team or self.is_admin

    @property
    def owner(self) -> str:
        """What the store records as the owner of what this viewer makes."""
        return self.user if self.team else ""

    def visible(self, alias: str = "") -> tuple[str, list]:
        """The SQL condition (and its parameters) selecting the rows this viewer may see."""
        if self.sees_all:
            return "1", []
        prefix = f"{alias}." if alias else ""
        return f"({prefix}owner = ? OR {prefix}shared = 1)", [self.user]

    def may_see(self, row: dict | None) -> bool:
        if row is None:
            return False
        return self.sees_all or row.get("owner") == self.user or bool(row.get("shared"))

    def may_change(self, row: dict | None) -> bool:
        if row is None:
            return False
        return self.sees_all or (bool(self.user) and row.get("owner") == self.user)

    def check_change(self, row: dict | None, what: str) -> None:
        """Raise :class:`NotAllowed` unless this viewer may change ``row`` (a ``what``)."""
        if row is not None and not self.may_change(row):
            whose = f"{row['owner']}'s" if row.get("owner") else "shared from before sign-in"
            raise NotAllowed(f"This {what} is {whose}: only its owner or an admin may change "
                             "or remove it.")


LOCAL = Viewer()


def viewer_or_local(viewer: Viewer | None) -> Viewer:
    return LOCAL if viewer is None else viewer


class StoreView:
    """The store as one viewer sees it: every store method that takes ``viewer`` is called with
    this one, every other attribute is the store's own. Handing a view instead of the store to a
    page, the example bank or the knowledge given to a run is what keeps them to what that user
    may see."""

    def __init__(self, store: Any, viewer: Viewer):
        self.store = store
        self.viewer = viewer

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.store, name)
        if callable(attr) and _takes_viewer(attr):
            return functools.partial(attr, viewer=self.viewer)
        return attr


@functools.lru_cache(maxsize=None)
def _takes_viewer_of(func: Any) -> bool:
    return "viewer" in inspect.signature(func).parameters


def _takes_viewer(method: Any) -> bool:
    return _takes_viewer_of(getattr(method, "__func__", method))
