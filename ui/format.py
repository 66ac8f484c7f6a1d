"""Small formatting helpers shared by the pages: sizes, result tables (SQL layout is
:func:`agents.sqltext.format_sql`, re-exported here for the views)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from agents.sqltext import format_sql  # noqa: F401 -- one layout for every view


def human_size(n: int | float | None) -> str:
    n = float(n or 0)
    for unit in ("bytes", "KB", "MB"):
        if n < 1024:
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"


def unique_columns(columns: list[str]) -> list[str]:
    """Column names made unique (``name``, ``name_2``): joins often return two ``name`` columns
    and a table widget needs distinct headers."""
    seen: dict[str, int] = {}
    out = []
    for c in columns:
        c = str(c)
        if c in seen:
            seen[c] += 1
            out.append(f"{c}_{seen[c]}")
        else:
            seen[c] = 1
            out.append(c)
    return out


def preview_frame(preview: dict | None) -> pd.DataFrame:
    """A DataFrame from an ``ExecResult.preview()`` dict (empty when there is no result)."""
    if not preview or not preview.get("columns"):
        return pd.DataFrame()
    columns = unique_columns(list(preview["columns"]))
    rows = [list(r) for r in preview.get("rows") or []]
    return pd.DataFrame(rows, columns=columns)


def tokens_text(prompt_tokens: int, completion_tokens: int) -> str:
    return f"{prompt_tokens + completion_tokens:,} tokens ({prompt_tokens:,} in, " \
           f"{completion_tokens:,} out)"


def is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))
