"""Units that schemas write into column names, and the words questions use for them.

A schema says a column's unit in its name (``duration_ms``, ``price_cents``, ``weight_g``,
``distance_km``); a question says it in words ("longer than 5 minutes", "in kilograms"). Both
the answer review (a unit the SQL leaves unconverted, :mod:`agents.answer.units`) and the
schema notes the agents are shown (:mod:`agents.retrieval.unit_notes`) read this one table, so
they agree on what a name means.

Each unit has the words a question uses, the parts of a column name that mean it, and its size
in the quantity's base unit (seconds, cents, bytes, metres, grams, millilitres), so a note can
say how to convert. A short part (``_m``, ``_g``, ``_ms``) counts only as the last part of a
longer name: ``distance_m`` is in metres, while ``m`` or ``ms_flag`` say nothing; a unit's
whole word counts anywhere (``Milliseconds``, ``cents_paid``). ``min`` is never read as
minutes (``min_salary`` is the least salary).
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Unit:
    quantity: str
    name: str            # as a note writes it: "milliseconds"
    words: tuple[str, ...]   # what a question says
    parts: tuple[str, ...]   # what a column name says
    size: float          # in the quantity's base unit


UNITS: tuple[Unit, ...] = (
    Unit("time", "milliseconds", ("millisecond", "milliseconds", "ms"),
         ("ms", "millis", "milliseconds"), 0.001),
    Unit("time", "seconds", ("seconds", "sec", "secs"), ("secs", "seconds", "sec"), 1),
    Unit("time", "minutes", ("minute", "minutes", "mins"), ("mins", "minutes"), 60),
    Unit("time", "hours", ("hour", "hours", "hrs"), ("hrs", "hours"), 3600),
    Unit("money", "cents", ("cent", "cents", "pence"), ("cents", "pence"), 1),
    Unit("money", "units of the currency",
         ("dollar", "dollars", "euro", "euros", "pound", "pounds", "usd", "eur"),
         ("dollars", "usd", "eur", "euros"), 100),
    Unit("size", "bytes", ("byte", "bytes"), ("bytes",), 1),
    Unit("size", "kilobytes", ("kilobyte", "kilobytes", "kb"), ("kb",), 1024),
    Unit("size", "megabytes", ("megabyte", "megabytes", "mb"), ("mb",), 1024 ** 2),
    Unit("length", "millimetres", ("millimetre", "millimetres", "millimeter", "millimeters",
                                   "mm"), ("mm",), 0.001),
    Unit("length", "metres", ("metre", "metres", "meter", "meters"),
         ("m", "metres", "meters"), 1),
    Unit("length", "kilometres", ("kilometre", "kilometres", "kilometer", "kilometers", "km"),
         ("km",), 1000),
    Unit("mass", "grams", ("gram", "grams"), ("g", "grams"), 1),
    Unit("mass", "kilograms", ("kilogram", "kilograms", "kg", "kilo", "kilos"), ("kg",), 1000),
    Unit("volume", "millilitres", ("millilitre", "millilitres", "milliliter", "milliliters",
                                   "ml"), ("ml",), 1),
    Unit("volume", "litres", ("litre", "litres", "liter", "liters"), ("litres", "liters"), 1000),
)
QUANTITIES = tuple(dict.fromkeys(u.quantity for u in UNITS))

_SHORT = 4  # parts this long or shorter are abbreviations: a unit only at a name's end
_PART = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+")  # SizeMB -> Size, MB; duration_ms


def name_parts(name: str) -> list[str]:
    """The words of a column name, in order and casefolded: ``SizeMB`` -> size, mb."""
    return [p.casefold() for chunk in re.split(r"[^A-Za-z]+", name or "")
            for p in _PART.findall(chunk)]


def column_unit(name: str) -> Unit | None:
    """The unit a column's name says its values are in, or None."""
    parts = name_parts(name)
    for position, part in enumerate(parts):
        short = len(part) <= _SHORT
        if short and (len(parts) < 2 or position != len(parts) - 1):
            continue
        for unit in UNITS:
            if part in unit.parts:
                return unit
    return None


def units_of(quantity: str) -> list[Unit]:
    return [u for u in UNITS if u.quantity == quantity]
