"""Small formatting helpers shared by the pages: sizes, result tables, text safe for Markdown
(SQL layout is :func:`agents.db.sqltext.format_sql`)."""

from __future__ import annotations

import re
from typing import Any

import pandas as pd


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


_MARKDOWN_ALWAYS = re.compile(r"[\\`*_~$\[\]<>&@]")
_MARKDOWN_COLON = re.compile(r":(?=\S)")            # :red[…], :smile:, http://
_MARKDOWN_WWW_DOT = re.compile(r"(?<=www)\.", re.I)  # www.example.org autolinks


def md_text(value: Any) -> str:
    """``value`` as literal text inside Markdown (``st.markdown``, ``st.caption``, ``st.error``,
    widget labels), for names and messages that come from a database or a file.

    Backslash-escapes (which CommonMark allows before any ASCII punctuation) what can start
    Markdown inline: emphasis, code, math, links and images, HTML, entities, e-mail and web
    autolinks, Streamlit's ``:color[…]`` directives and ``:shortcodes:``; a leading mark that
    could start a heading, list or quote; line breaks become spaces. So a table called
    ``![x](http://…)`` shows as typed instead of making the browser load a remote image, while
    ordinary text ("Refused: …", "1.0 MiB") reads unchanged.
    """
    text = " ".join(str(value).splitlines()) if value is not None else ""
    text = _MARKDOWN_ALWAYS.sub(lambda m: "\\" + m.group(0), text)
    text = _MARKDOWN_WWW_DOT.sub("\\.", _MARKDOWN_COLON.sub("\\:", text))
    if text[:1] and text[:1] in "#>-+=|!":
        text = "\\" + text
    return re.sub(r"^(\d+)([.)])", r"\1\\\2", text)


def pipeline_label(pipeline: Any) -> str:
    """What the pages call a pipeline (a pipeline or its name): what it does for the user, its
    paper's name beside it (its ``label``), else its title, else its name. A name no installed
    pipeline has (an old run's, an evaluation's) is shown as it is."""
    if isinstance(pipeline, str):
        from agents.pipelines import get_pipeline

        try:
            pipeline = get_pipeline(pipeline)
        except KeyError:
            return pipeline
    return getattr(pipeline, "label", "") or pipeline.title or pipeline.name
