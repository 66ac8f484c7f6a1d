"""Structured output: how a JSON schema is asked for, and the fallback when a server refuses.

Servers differ: OpenAI and llama.cpp take ``response_format: json_schema``, some only
``json_object``, some neither. The client starts at the strongest level the settings allow and,
when a server rejects the ``response_format`` (a 400/422 about it), steps down one level for the
rest of its life; the prompt always describes the format too, so plain text still works.
"""

from __future__ import annotations

import openai

from agents.llm.errors import server_message

JSON_LEVELS = ("json_schema", "json_object", "none")


def response_format(json_schema: dict | None, level: int) -> dict | None:
    """The ``response_format`` to send for ``json_schema`` at ``JSON_LEVELS[level]``.

    ``json_schema`` is a JSON Schema or OpenAI's wrapper ``{"name", "schema", "strict"}``.
    """
    if json_schema is None or JSON_LEVELS[level] == "none":
        return None
    if JSON_LEVELS[level] == "json_object":
        return {"type": "json_object"}
    if "schema" in json_schema and isinstance(json_schema.get("schema"), dict):
        wrapper = {"name": json_schema.get("name") or "answer", "schema": json_schema["schema"],
                   "strict": bool(json_schema.get("strict", False))}
    else:
        wrapper = {"name": "answer", "schema": json_schema, "strict": False}
    return {"type": "json_schema", "json_schema": wrapper}


def rejects_response_format(exc: openai.APIStatusError) -> bool:
    """A 400/422 whose message is about response_format (structured output unsupported)."""
    if exc.status_code not in (400, 422):
        return False
    text = f"{server_message(exc)} {exc.message}".lower()
    return any(s in text for s in ("response_format", "json_schema", "json_object",
                                   "response format"))
