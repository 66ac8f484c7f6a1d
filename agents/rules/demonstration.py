"""Names a model copied from a prompt's worked example instead of taking them from the database.

The papers' prompts carry demonstrations: MAC-SQL's Selector shows a banking database (tables
``account``, ``client``, ``loan``, ``district``), CSMA's answer format names ``table_x``, DEA-SQL's
names ``xxx``. A model sometimes answers with those names. They are ignored like any unknown name,
but the note says where they came from, so a reader of the trace is not left wondering what
"account" is in a music database.
"""

from __future__ import annotations

import functools
import re

from agents.llm.prompts import load


@functools.lru_cache(maxsize=32)
def template(folder: str, name: str) -> str:
    """A prompt template's text, demonstration included (read once)."""
    return load(folder, name)


def from_demonstration(raw_name: object, demonstration: str) -> bool:
    """Whether ``raw_name`` (a name the database does not have) appears in the demonstration."""
    name = str(raw_name).strip().strip("`\"'[]").strip()
    if not name or not demonstration:
        return False
    return re.search(rf"(?<![\w]){re.escape(name)}(?![\w])", demonstration,
                     re.IGNORECASE) is not None


def ignored_names(raw_names: list, what: str, demonstration: str = "",
                  prefix: str = "") -> list[str]:
    """Notes for names the answer used that the database does not have, the ones copied from the
    prompt's worked example said apart: ``ignored unknown table 'ghost'`` and ``ignored table
    'account': it comes from the prompt's worked example, not from this database``."""
    copied = [n for n in raw_names if from_demonstration(n, demonstration)]
    unknown = [n for n in raw_names if n not in copied]
    plural = f"{what}(s)" if len(raw_names) > 1 else what
    notes = []
    if unknown:
        names = ", ".join(map(repr, unknown))
        notes.append(f"{prefix}ignored unknown {what if len(unknown) == 1 else plural} {names}")
    if copied:
        names = ", ".join(map(repr, copied))
        notes.append(f"{prefix}ignored {what if len(copied) == 1 else f'{what}s'} {names}: "
                     f"copied from the prompt's worked example, not from this database")
    return notes
