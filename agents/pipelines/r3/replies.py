"""Reading R³'s three kinds of model answers: the writer's SQL, the invitation, a review.

Each parser either returns plain data or raises :class:`~agents.core.engine.ParseError` with a message
that tells the model (on the engine's one retry) and then the user exactly what was missing.
They are lenient about form -- a small model wraps, labels and decorates its answers in many
ways -- and strict only about the content each step needs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from agents.core.engine import ParseError
from agents.llm.parsing import extract_json, extract_sql

# a Markdown fence: tag, body; an unclosed fence runs to the end (a cut-off answer)
_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n`]*\n?(.*?)(?:```|\Z)", re.DOTALL)
_QUERY_START = re.compile(r"^\s*(select|with)\b", re.IGNORECASE)


@dataclass
class WriterReply:
    sql: str
    text: str  # the reasoning / rebuttal around the SQL


def parse_writer_reply(text: str) -> WriterReply:
    """The writer's last SQL query and the prose around it (its reasoning or rebuttal)."""
    sql = extract_sql(text)
    rest = _FENCE.sub(lambda m: "" if _holds_sql(m) else m.group(0), text)
    if rest == text:  # a bare statement in the prose: keep what precedes it
        cut = text.find(sql.split("\n", 1)[0])
        rest = text[:cut] if cut >= 0 else text
    return WriterReply(sql=sql, text=rest.strip())


def _holds_sql(fence: re.Match) -> bool:
    tag = fence.group(1).lower()
    return tag in ("sql", "sqlite") or (tag not in ("python", "py")
                                        and bool(_QUERY_START.match(fence.group(2))))


# -- invitation --------------------------------------------------------------------------------

_PLACEHOLDER = re.compile(r"<[^<>]*>")
_DESCRIPTION_KEYS = ("expertise", "description", "profession", "role", "title", "focus")


def parse_personas(text: str) -> list[dict]:
    """Reviewer personas from the invitation: ``[{"name", "expertise"}]``, in the given order.

    The paper's format is a JSON object ``{"Reviewer PVsg": "Data Analyst in ..."}``; a list of
    ``{"name", "expertise"}`` objects (or of plain strings) is accepted too.
    """
    value = extract_json(text)
    personas: list[dict] = []
    if isinstance(value, dict) and len(value) == 1 and isinstance(next(iter(value.values())), list):
        value = next(iter(value.values()))  # {"reviewers": [...]}
    if isinstance(value, dict):
        for key, desc in value.items():
            personas.append(_persona(str(key), desc))
    elif isinstance(value, list):
        for i, item in enumerate(value, 1):
            if isinstance(item, dict):
                name = str(item.get("name") or item.get("reviewer") or f"Reviewer {i}")
                personas.append(_persona(name, item))
            else:
                personas.append(_persona(f"Reviewer {i}", item))
    else:
        raise ParseError("the invitation must be a JSON object of reviewer name -> expertise")
    personas = [p for p in personas if p["expertise"]]
    if not personas:
        raise ParseError("the invitation names no reviewer with an expertise")
    if any(_PLACEHOLDER.search(p["expertise"]) for p in personas):
        raise ParseError("replace the <...> placeholders of the example with real expertise")
    seen: set[str] = set()
    for p in personas:  # names label the events, so they must be unique
        base, n = p["name"], 2
        while p["name"].lower() in seen:
            p["name"], n = f"{base} ({n})", n + 1
        seen.add(p["name"].lower())
    return personas


def persona_label(persona: dict, width: int = 60) -> str:
    """A reviewer's name: its expertise, shortened (the model's own keys are often the random ids
    of the prompt's example, such as "Reviewer 2KtR", which tell a reader nothing)."""
    text = persona.get("expertise") or persona.get("name") or "reviewer"
    return text if len(text) <= width else text[:width - 1].rstrip() + "…"


def distinct_personas(personas: list[dict]) -> tuple[list[dict], list[str]]:
    """``(personas, repeated)``: each persona named by its expertise, and an expertise invited
    twice kept once (a repeat would send the same prompt and review exactly as the first)."""
    kept: list[dict] = []
    repeated: list[str] = []
    seen: set[str] = set()
    names: set[str] = set()
    for persona in personas:
        key = " ".join(persona["expertise"].casefold().split()).strip(" .")
        if key in seen:
            repeated.append(persona["expertise"])
            continue
        seen.add(key)
        name, n = persona_label(persona), 2
        base = name
        while name.casefold() in names:
            name, n = f"{base} ({n})", n + 1
        names.add(name.casefold())
        kept.append({"name": name, "expertise": persona["expertise"]})
    return kept, repeated


def _persona(name: str, desc: object) -> dict:
    if isinstance(desc, dict):
        desc = next((desc[k] for k in _DESCRIPTION_KEYS if desc.get(k)), "")
    expertise = " ".join(str(desc or "").split())
    return {"name": " ".join(name.split()) or "Reviewer", "expertise": expertise}


# -- review ------------------------------------------------------------------------------------

_VERDICT = re.compile(r"verdict\W{0,6}(approve[sd]?|approval|revise[sd]?|revision|reject(?:ed)?)",
                      re.IGNORECASE)
_LABEL = re.compile(r"^\W*(comments?|review)\W*?:[\s*]*", re.IGNORECASE)
_APPROVE_WORD = re.compile(r"\bapprove[sd]?\b", re.IGNORECASE)
_REVISE_WORD = re.compile(r"\b(revise[sd]?|revision)\b", re.IGNORECASE)


def parse_review(text: str) -> dict:
    """``{"comment", "verdict"}`` with verdict ``approve`` or ``revise``.

    The verdict comes from a ``VERDICT:`` line; without one, from the answer's only verdict word
    ("approve" or "revise"). A ``revise`` verdict must say what to change.
    """
    text = (text or "").strip()
    found = list(_VERDICT.finditer(text))
    if found:
        word = found[-1].group(1).lower()
        comment = (text[:found[-1].start()] + text[found[-1].end():]).strip()
    else:
        approve, revise = bool(_APPROVE_WORD.search(text)), bool(_REVISE_WORD.search(text))
        if approve == revise:
            raise ParseError("no verdict found: end with the line 'VERDICT: approve' "
                             "or 'VERDICT: revise'")
        word, comment = ("approve" if approve else "revise"), text
    verdict = "approve" if word.startswith("approv") else "revise"
    comment = _LABEL.sub("", comment.strip(" \n*#-:")).strip()
    if verdict == "revise" and not comment:
        raise ParseError("a 'revise' verdict needs a comment saying what is wrong")
    return {"comment": comment, "verdict": verdict}
