"""Runs exported for work outside the studio: CSV for a spreadsheet, JSONL for scripts.

CSV holds one row per run with its outcome, its accepted answer beside the model's SQL and its
latest annotation (the columns a list shows); JSONL holds the full trace, the accepted answer and
the annotation per line, enough to rebuild the run elsewhere.
"""

from __future__ import annotations

import csv
import io
import json
from typing import Any, Iterable

from .access import Viewer
from .connection import StoreConnection
from .schema import ACCEPTED_COLUMNS, ANNOTATION_COLUMNS, RUN_COLUMNS

EXPORT_COLUMNS = RUN_COLUMNS + ACCEPTED_COLUMNS + ANNOTATION_COLUMNS
# A spreadsheet reads a cell starting with one of these as a formula (OWASP, "CSV injection"):
# a question, a note or a stored value such as ``=HYPERLINK(...)`` would run when opened.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def safe_cell(value: Any) -> Any:
    """``value`` as a CSV cell a spreadsheet shows as text: a string that would start a formula
    gets a leading apostrophe (numbers, including negative ones, stay numbers)."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


class ExportPart(StoreConnection):
    """The export method of :class:`~agents.store.Store` (``list_runs``, ``get_run`` and
    ``get_annotation`` come from the other parts)."""

    def export_runs(self, rows: Iterable[dict] | None = None, fmt: str = "csv", *,
                    viewer: Viewer | None = None, **filters: Any) -> str:
        """Runs as CSV (one row per run, latest annotation columns) or JSONL (full run and
        annotation per line).

        ``rows`` are rows from :meth:`list_runs` (e.g. what a page shows); without them the runs
        matching ``filters`` (the :meth:`list_runs` keywords) are exported, all of them by default;
        only what ``viewer`` may see either way.
        """
        if fmt not in ("csv", "jsonl"):
            raise ValueError(f"export format must be 'csv' or 'jsonl'; got {fmt!r}")
        if rows is None:
            rows = self.list_runs(**{"limit": None, **filters}, viewer=viewer)
        rows = list(rows)
        out = io.StringIO()
        if fmt == "csv":
            writer = csv.DictWriter(out, fieldnames=EXPORT_COLUMNS, extrasaction="ignore",
                                    lineterminator="\n")
            writer.writeheader()
            writer.writerows({k: safe_cell(v) for k, v in row.items()} for row in rows)
            return out.getvalue()
        for row in rows:
            run = self.get_run(row["run_id"], viewer=viewer)
            if run is None:  # deleted meanwhile
                continue
            out.write(json.dumps({
                "run": run.to_dict(),
                "source": row.get("source"),
                "db_label": row.get("db_label"),
                "outcome": row.get("outcome"),
                "accepted": self.get_accepted(row["accepted_id"], viewer=viewer)
                if row.get("accepted_id") else None,
                "annotation": self.get_annotation(row["run_id"], viewer=viewer),
            }, default=str, ensure_ascii=False) + "\n")
        return out.getvalue()
