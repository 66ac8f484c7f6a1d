"""Tell the writers the units the schema stores its values in, and how to convert them.

A database nobody wrote for Spider stores durations in milliseconds, money in cents, weights in
grams and times as Unix epoch seconds, and says so only in a column's name (``duration_ms``,
``charge_cents``) or in its values (``1724758553``). A small model asked "how many hours" sums
the milliseconds; asked "in which month" it reads the epoch integer as a date. The kinds are
general, so the remedy is too: from the schema alone (column names, declared types and example
values, never the question), one short note per such column, with the factors to the units a
question usually asks in, is added to the evidence every prompt of the run already carries.

The note depends only on the schema the agents see, so it is the same for every question on a
database (the model server's prefix cache keeps it), and it is empty, so no prompt changes, on
a schema whose names and values say no unit (Spider's, nearly always).
"""

from __future__ import annotations

from agents.core.engine import STUDIO, ParamSpec
from agents.db.units import column_unit, name_parts, units_of

PARAM = "unit_notes"
HEADING = "Units of stored values (convert to the unit the question asks for):"
MAX_NOTES = 12  # columns noted at most: the note is a hint, not a second schema

# Unix time: integers in this range are seconds since 1970 for the years 1980-2100, and the
# same times in milliseconds a thousand times larger; a name must say it is a time as well
_EPOCH_S = (315_532_800, 4_102_444_800)
_TIME_PARTS = {"ts", "timestamp", "time", "epoch", "unix", "at", "when", "datetime", "date",
               "created", "updated", "modified", "started", "ended", "departed", "arrived",
               "delivered", "shipped", "returned"}
# the units worth a factor in a note, per quantity: those a question is likely to ask in
_ASKED_IN = {"time": ("seconds", "minutes", "hours"), "money": ("units of the currency",),
             "size": ("kilobytes", "megabytes"), "length": ("metres", "kilometres"),
             "mass": ("kilograms",), "volume": ("litres",)}
_ONE = {"seconds": "second", "minutes": "minute", "hours": "hour", "kilobytes": "kilobyte",
        "megabytes": "megabyte", "metres": "metre", "kilometres": "kilometre",
        "kilograms": "kilogram", "litres": "litre", "units of the currency":
        "unit of the currency"}


def _number(value: float) -> str:
    return f"{value:,.0f}".replace(",", "") if float(value).is_integer() else f"{value:g}"


def _factors(unit) -> str:
    """``1 minute = 60000 milliseconds``, for the larger units a question may ask in."""
    by_name = {u.name: u for u in units_of(unit.quantity)}
    said = [f"1 {_ONE.get(name, name)} = {_number(by_name[name].size / unit.size)} {unit.name}"
            for name in _ASKED_IN.get(unit.quantity, ()) if by_name[name].size > unit.size]
    return f" ({', '.join(said)})" if said else ""


def _epoch(column) -> str | None:
    """``seconds`` or ``milliseconds`` when the column holds Unix times, else None."""
    if column.affinity not in ("INTEGER", "NUMERIC", "REAL") or \
            not set(name_parts(column.name)) & _TIME_PARTS:
        return None
    values = [v for v in column.examples if isinstance(v, (int, float)) and
              not isinstance(v, bool)]
    if not values:
        return None
    low, high = _EPOCH_S
    if all(low <= v <= high for v in values):
        return "seconds"
    if all(low * 1000 <= v <= high * 1000 for v in values):
        return "milliseconds"
    return None


def column_note(table: str, column) -> str | None:
    """The note for one column, or None when its name and values say no unit."""
    where = f"{table}.{column.name}"
    epoch = _epoch(column)
    if epoch == "seconds":
        return (f"- {where}: Unix time in seconds (its date: date({column.name}, 'unixepoch'); "
                f"a difference / 3600.0 is in hours)")
    if epoch == "milliseconds":
        return (f"- {where}: Unix time in milliseconds (a date: "
                f"date({column.name} / 1000, 'unixepoch'))")
    if column.affinity == "TEXT":
        return None  # a unit in a text column's name is a label ("size_mb" as "12 MB")
    unit = column_unit(column.name)
    factors = _factors(unit) if unit is not None else ""
    if not factors:
        return None  # no unit, or already the one questions ask in (hours, kilograms)
    return f"- {where}: {unit.name}{factors}"


def unit_notes(schema) -> str | None:
    """The note on the units of ``schema``'s columns, or None when none says a unit."""
    lines = []
    for table in schema.tables:
        for column in table.columns:
            line = column_note(table.name, column)
            if line:
                lines.append(line)
    if not lines:
        return None
    left = len(lines) - MAX_NOTES
    lines = lines[:MAX_NOTES] + ([f"- ({left} more columns like these)"] if left > 0 else [])
    return "\n".join([HEADING] + lines)


def with_unit_notes(evidence: str, schema) -> str:
    """The run's evidence followed by the units note (the evidence itself when there is none):
    the action of the ``unit_notes`` rule (:mod:`agents.rules.registry`)."""
    note = unit_notes(schema)
    if not note:
        return evidence
    return f"{evidence.rstrip()}\n{note}" if (evidence or "").strip() else note


def param_spec(default: bool):
    """The pipeline option (see ``bench/README.md`` for the measurement its default follows)."""
    return ParamSpec(PARAM, default, origin=STUDIO,
                     help="tell the writers the units and Unix times the column names and "
                          "values say, with conversion factors")
