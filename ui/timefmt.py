"""Times as people read them: the store keeps UTC (``2025-03-01T13:05:09Z``), the pages show the
server's local time with the zone's name (``2025-03-01 14:05:09 CET``).

The browser's time zone is not known to the server, so every page uses the one zone the studio
runs in and names it; a different zone is set the usual way, with ``TZ`` when starting the app.
"""

from __future__ import annotations

from datetime import datetime, timezone

from agents.store.schema import parse_iso_utc

FORMAT = "%Y-%m-%d %H:%M:%S"


def zone_name(when: datetime | None = None) -> str:
    """The server's time zone as shown beside times: its abbreviation, else its UTC offset."""
    local = (when or datetime.now(timezone.utc)).astimezone()
    name = local.strftime("%Z")
    if name and not name[:1] in "+-":
        return name
    offset = local.strftime("%z")
    return f"UTC{offset[:3]}:{offset[3:]}" if offset else "UTC"


def local_time(stamp: str | None, *, zone: bool = True, seconds: bool = True) -> str:
    """A stored UTC timestamp in the server's local time, with the zone's name unless ``zone``
    is off (a table whose header names it), to the minute when ``seconds`` is off; text that is not a timestamp is returned as it is."""
    if not stamp:
        return ""
    when = parse_iso_utc(stamp)
    if when is None:
        return str(stamp)
    text = when.astimezone().strftime(FORMAT if seconds else FORMAT[:-3])
    return f"{text} {zone_name(when)}" if zone else text
