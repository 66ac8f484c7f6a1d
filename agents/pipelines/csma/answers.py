"""Reading the CSMA agents' answers: an extraction (JSON map, or in the compact variant a JSON
list of table names) and a check verdict (JSON object).

Both raise :class:`~agents.core.engine.ParseError` with a message meant to be fed back to the model,
which the engine does once before failing the step.
"""

from __future__ import annotations

import re
from pathlib import Path

from agents.core.engine import ParseError
from agents.llm.parsing import extract_json
from agents.rules.demonstration import ignored_names, template
from .schema_ops import SchemaMap, clean_name, resolve_extraction

HERE = Path(__file__).parent

POSITIVE = "positive"
NEGATIVE = "negative"

_POSITIVE_WORDS = {"correct", "right", "yes", "true", "positive", "ok", "valid", "pass"}
_NEGATIVE_WORDS = {"wrong", "incorrect", "no", "false", "negative", "invalid", "fail"}
_LEADING_WORD = re.compile(r"^\W*([A-Za-z]+)")
_QUOTED = re.compile(r'"([^"\n]+)"')

CHECK_JSON_SCHEMA = {
    "type": "object",
    "properties": {
        "verdict": {"type": "string", "enum": ["correct", "wrong"]},
        "reason": {"type": "string"},
    },
    "required": ["verdict", "reason"],
    "additionalProperties": False,
}


def parse_extraction(text: str, known: SchemaMap) -> tuple[SchemaMap, list[str]]:
    """``(extracted, notes)`` from a ``{table: [columns]}`` answer; ``{}`` means nothing needed.

    An answer that names tables, none of them known, is an error (the model should use the
    names it was shown); unknown names next to known ones are only noted.
    """
    value = extract_json(text)
    if not isinstance(value, dict):
        raise ParseError('expected one JSON object such as {"table": ["column", "column"]}')
    extracted, notes = resolve_extraction(value, known, template(str(HERE), "extract"))
    known_tables = {t.casefold() for t in known}
    unknown = [k for k in value if clean_name(k).casefold() not in known_tables]
    if unknown and not extracted:
        raise ParseError(f"none of the tables named is in the schema; use only these: "
                         f"{', '.join(known)}")
    return extracted, notes


def parse_table_extraction(text: str, known: SchemaMap) -> tuple[list[str], list[str]]:
    """``(tables, notes)`` from the compact variant's ``{"tables": [...]}`` answer, in database
    order of ``known``; an empty list means nothing is needed.

    A bare list, or an object keyed by table names (the paper's answer shape, where an empty
    column list means the table is not needed), says the same thing and is accepted. An answer cut off while repeating names (no valid JSON) still names
    its tables: the known table names it quotes are used, with a note. Naming only unknown
    tables is an error, as in :func:`parse_extraction`.
    """
    by_name = {t.casefold(): t for t in known}
    try:
        value = extract_json(text)
    except ParseError:
        quoted = [m.group(1) for m in _QUOTED.finditer(str(text or ""))]
        if not any(clean_name(q).casefold() in by_name for q in quoted):
            raise
        value, notes = quoted, ["the answer was not valid JSON (cut off?); used the known "
                                "table names it quoted"]
    else:
        notes = []
    if isinstance(value, dict):
        listed = value.get("tables")
        value = listed if isinstance(listed, (list, str)) else [k for k, v in value.items() if v]
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        raise ParseError('expected one JSON object such as {"tables": ["table_x", "table_y"]}')
    chosen, unknown = set(), []
    for raw in value:
        table = by_name.get(clean_name(str(raw)).casefold())
        if table is None:
            if str(raw) not in unknown:
                unknown.append(str(raw))
        else:
            chosen.add(table)
    if unknown and not chosen:
        raise ParseError(f"none of the tables named is in the schema; use only these: "
                         f"{', '.join(known)}")
    if unknown:
        notes += ignored_names(unknown, "table", template(str(HERE), "extract_compact"))
    return [t for t in known if t in chosen], notes


def parse_check(text: str) -> dict:
    """``{"verdict": "positive" | "negative", "reason": str}`` from the checker's answer.

    Takes the JSON object asked for; a bare leading word ("Correct. ...", "Wrong: ...") is
    accepted too, since it says the same thing.
    """
    try:
        value = extract_json(text)
    except ParseError:
        value = None
    if isinstance(value, dict):
        verdict = _verdict_of(value)
        if verdict is None:
            raise ParseError('the "verdict" must be "correct" or "wrong"')
        reason = value.get("reason") or value.get("explanation") or ""
        return {"verdict": verdict, "reason": str(reason).strip()}
    match = _LEADING_WORD.match(str(text or ""))
    word = match.group(1).lower() if match else ""
    if word in _POSITIVE_WORDS or word in _NEGATIVE_WORDS:
        reason = str(text)[match.end():].strip(" \t\n.:-")
        return {"verdict": POSITIVE if word in _POSITIVE_WORDS else NEGATIVE, "reason": reason}
    raise ParseError('answer with one JSON object: {"verdict": "correct" or "wrong", '
                     '"reason": "..."}')


def _verdict_of(value: dict) -> str | None:
    for key in ("verdict", "result", "judgement", "judgment", "correct", "is_correct"):
        if key not in value:
            continue
        raw = value[key]
        if isinstance(raw, bool):
            return POSITIVE if raw else NEGATIVE
        word = str(raw).strip().lower()
        if word in _POSITIVE_WORDS:
            return POSITIVE
        if word in _NEGATIVE_WORDS:
            return NEGATIVE
    return None
