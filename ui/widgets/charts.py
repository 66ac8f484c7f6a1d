"""Picks a chart for a query result and draws it with Plotly.

A chart is offered when the result has a category or time column and a numeric one: a time axis
gets a line, categories get bars. The reader can switch to bar, line, scatter or pie, or hide it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pandas as pd
import plotly.express as px

KINDS = ["bar", "line", "scatter", "pie"]
MAX_CATEGORIES = 60  # more bars than this is a table, not a chart

_ISO_TIME = re.compile(r"^\d{4}(-\d{1,2}(-\d{1,2})?)?([ T]\d{1,2}:\d{2}(:\d{2}(\.\d+)?)?)?$")
_TIME_NAMES = re.compile(r"(^|_)(year|month|day|date|week|quarter|time|period)s?($|_)", re.I)
_ID_NAMES = re.compile(r"(^id$|_id$|^id_)", re.I)


@dataclass
class ChartChoice:
    kind: str
    x: str
    y: str


def is_numeric(series: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series)


def is_time(series: pd.Series) -> bool:
    """Dates, ISO-like date strings ('2024-03', '2024-03-01 10:00'), or whole-number years."""
    if pd.api.types.is_datetime64_any_dtype(series):
        return True
    values = series.dropna()
    if values.empty:
        return False
    if is_numeric(series):
        named = bool(_TIME_NAMES.search(str(series.name)))
        return named and bool(((values % 1 == 0) & values.between(1000, 3000)).all())
    return bool(values.astype(str).str.match(_ISO_TIME).all())


def is_category(series: pd.Series) -> bool:
    if is_numeric(series):
        return False
    return 1 < series.nunique(dropna=True) <= MAX_CATEGORIES


def choose_chart(frame: pd.DataFrame) -> ChartChoice | None:
    """The chart this result suggests, or None when a chart would not help (one row, no
    numbers, no category or time column)."""
    if frame is None or len(frame) < 2 or frame.shape[1] < 2:
        return None
    columns = list(frame.columns)
    times = [c for c in columns if is_time(frame[c])]
    numbers = [c for c in columns if is_numeric(frame[c]) and c not in times]
    measures = [c for c in numbers if not _ID_NAMES.search(str(c))] or numbers
    if not measures:
        return None
    if times:
        return ChartChoice("line", times[0], measures[0])
    categories = [c for c in columns if c not in numbers and is_category(frame[c])]
    if categories:
        return ChartChoice("bar", categories[0], measures[0])
    return None


def figure(frame: pd.DataFrame, kind: str, x: str, y: str):
    """A Plotly figure of ``y`` against ``x``; line charts are sorted along the time axis."""
    data = frame[[x, y]].dropna() if x != y else frame[[x]].dropna()
    if kind == "line":
        data = data.sort_values(x)
        return px.line(data, x=x, y=y, markers=True)
    if kind == "scatter":
        return px.scatter(data, x=x, y=y)
    if kind == "pie":
        return px.pie(data, names=x, values=y)
    return px.bar(data, x=x, y=y)
