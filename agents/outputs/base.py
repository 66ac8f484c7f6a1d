"""The base of every output kind, the registry of kinds and the reader for older runs."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any, ClassVar

from agents.db.sqltext import normalize_sql

_KINDS: dict[str, type["Output"]] = {}


@dataclass
class Output:
    """One kind of agent output. Subclasses set ``kind`` and declare their fields.

    ``extra`` keeps keys a record does not declare (an edited state, an older run), so reading a
    stored output and writing it back never loses anything. ``required`` names the fields a
    stored dict must have to be read as this kind; otherwise it is shown generically.
    """

    kind: ClassVar[str] = ""
    required: ClassVar[tuple[str, ...]] = ()
    extra: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        """Plain JSON; an optional field left unset (None) is left out, so the stored shape
        holds what the agent said and nothing more."""
        data = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                if f.name != "extra" and (f.name in self.required
                                          or not (getattr(self, f.name) is None
                                                  and f.default is None))}
        return {**self.extra, **data}

    @classmethod
    def from_dict(cls, data: dict) -> "Output":
        if not isinstance(data, dict):
            raise ValueError(f"a {cls.kind} output is an object, not {type(data).__name__}")
        missing = [name for name in cls.required if name not in data]
        if missing:
            raise ValueError(f"a {cls.kind} output needs {', '.join(missing)}")
        names = {f.name for f in dataclasses.fields(cls)} - {"extra"}
        known = {k: v for k, v in data.items() if k in names}
        return cls(**known, extra={k: v for k, v in data.items() if k not in names})

    def text_lines(self) -> list[str]:
        """The output as short plain-text lines (the CLI's view); generic by default."""
        return generic_lines(self.to_dict())

    def shown_sql(self) -> list[str]:
        """SQL texts the views of this output already show, so a view does not repeat the
        step's SQL under it."""
        return [v for k, v in self.to_dict().items() if _is_sql_key(k) and isinstance(v, str)]

    def executed_label(self) -> str:
        """How a view introduces the result of the step's executed SQL; an output that shows
        more than one query says which of them the step executed."""
        return "Executed"


@dataclass
class Generic(Output):
    """Anything without a kind of its own: shown as readable fields, never raw JSON."""

    kind: ClassVar[str] = "generic"
    data: Any = None

    def to_dict(self) -> Any:
        return self.data

    @classmethod
    def from_dict(cls, data: Any) -> "Generic":
        return cls(data=data)

    def text_lines(self) -> list[str]:
        return generic_lines(self.data)

    def shown_sql(self) -> list[str]:
        return list(_strings(self.data))


def register(cls: type[Output]) -> type[Output]:
    """Class decorator: make ``cls`` the record of its ``kind``."""
    if not cls.kind:
        raise ValueError(f"{cls.__name__} has no kind")
    _KINDS[cls.kind] = cls
    return cls


register(Generic)


def kinds() -> dict[str, type[Output]]:
    """Every registered kind. A pipeline registers its own kinds when it is imported, so a
    caller rebuilding stored runs loads the pipelines first (:func:`agents.pipelines.load_run`);
    this layer sits below them and never imports them."""
    return dict(_KINDS)


def load(kind: str | None, parsed: Any) -> Output:
    """The typed record of a stored output; a shape its kind does not accept is Generic."""
    if parsed is None:
        return Generic(data=None)
    cls = _KINDS.get(kind or "")
    if cls is None or cls is Generic:
        return Generic(data=parsed)
    try:
        return cls.from_dict(parsed)
    except (TypeError, ValueError):
        return Generic(data=parsed)


# -- runs stored before kinds ----------------------------------------------------------------

# Agent display names of the pipelines as they were, to the kind their outputs are. Used only
# for runs stored without a kind; new events always carry theirs.
_LEGACY_BY_AGENT = {
    "selector": "schema_selection", "informationfilter": "information_filter",
    "decomposer": "decomposition", "refiner": "sql_repair", "sqlwriter": "sql_draft",
    "execution": "execution_check", "executioncheck": "execution_check",
    "invitation": "reviewer_invitation", "reviewer": "review",
    "rebuttalrevision": "revision", "elementsidentification": "elements",
    "classificationhint": "classification", "classification": "classification",
    "sqlgeneration": "few_shot_generation", "selfcorrection": "self_correction",
    "activelearning": "active_learning", "schemaowners": "schema_partition",
}


def infer_kind(agent: str | None, parsed: Any) -> str:
    """The kind of an output stored without one, from its agent's name and its shape."""
    if not isinstance(parsed, dict):
        return "generic"
    words = (agent or "").split()
    name = _norm(agent)
    if words and words[0].lower() == "agent":  # CSMA's "Agent 2"
        if "global_schema" in parsed:
            return "schema_extraction"
        if "verdict" in parsed:
            return "sql_check"
        return "agent_sql" if "sql" in parsed else "generic"
    if name == "sqlwriter" and {"error", "sql_before"} & set(parsed):
        return "sql_repair"  # R³'s writer correcting an execution error
    kind = _LEGACY_BY_AGENT.get(name) or _LEGACY_BY_AGENT.get(_norm(words[0]) if words else "")
    return kind or "generic"


def _norm(text: str | None) -> str:
    return re.sub(r"[^a-z0-9]+", "", (text or "").lower())


# -- plain-text helpers shared by the kinds' text views ---------------------------------------

def _is_sql_key(key: str) -> bool:
    k = key.lower()
    return k == "sql" or k.endswith("_sql") or k.startswith("sql_")


def shows_sql(output: "Output", sql: str) -> bool:
    """Whether the views of ``output`` already show ``sql`` (so the step's SQL is not shown
    twice under them)."""
    shown = output.shown_sql()
    target = normalize_sql(sql)
    return "*" in shown or any(normalize_sql(s) == target for s in shown)


def holds_text(value: Any, text: str) -> bool:
    """Whether any string inside ``value`` is ``text`` (spacing aside)."""
    target = " ".join(text.split())
    return any(" ".join(s.split()) == target for s in _strings(value))


def _strings(value: Any):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def short(value: Any, limit: int = 160, empty: str = "-") -> str:
    """A value on one line, cut to ``limit`` characters."""
    text = ", ".join(map(str, value)) if isinstance(value, list) else str(value)
    text = " ".join(text.split()) or empty
    return text if len(text) <= limit else text[: limit - 1] + "…"


def generic_lines(value: Any) -> list[str]:
    """Any JSON value as indented ``key: value`` lines."""
    if isinstance(value, dict):
        return [f"  {k}: {short(v)}" for k, v in value.items() if v not in (None, "", [], {})]
    if isinstance(value, list):
        return [f"  - {short(v)}" for v in value]
    return [] if value is None else [f"  {short(value)}"]
