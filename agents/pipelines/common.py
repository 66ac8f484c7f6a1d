"""Small helpers the pipelines share: how a schema, a question and its evidence enter a prompt.

Every agent of one question must see the schema as the *same bytes* (given the same selection),
because the local llama.cpp server reuses the key/value cache of a prompt prefix it has already
processed; a stray space would make it process the whole schema again.
"""

from __future__ import annotations

NO_EVIDENCE = "None"


def schema_size(schema) -> tuple[int, int]:
    """(number of tables, total number of columns) of ``schema``."""
    return len(schema.tables), sum(len(t.columns) for t in schema.tables)


def macsql_schema(schema, selection: dict | None = None) -> tuple[str, str]:
    """The MAC-SQL schema description and its foreign-key lines for ``selection`` (None: all)."""
    return (schema.render_macsql(selection).strip(),
            schema.render_foreign_keys(selection).strip())


def evidence_text(evidence: str | None) -> str:
    """The evidence as it appears in a prompt; an explicit word rather than an empty section,
    so the model does not read the next heading as the evidence."""
    text = (evidence or "").strip()
    return text if text else NO_EVIDENCE


def user_message(text: str) -> list[dict]:
    """A one-message chat: the papers' prompts are single instructions, not dialogues."""
    return [{"role": "user", "content": text}]
