"""When, with which code and beside how much other load each part of an evaluation ran.

An evaluation of a slow pipeline on a small machine is often run in several sittings (stopped,
then resumed into the same folder), sometimes with other work on the CPU. Its seconds per
question only mean something together with that history, and writing it down by hand after the
fact is how it goes wrong. So every ``agents eval`` invocation appends one record to the output
folder's ``sittings.jsonl`` (and every resumed-run measurement keeps them in its report): start
and end (UTC), the code it ran (the git commit, ``+changes`` when the engine's files under
``agents/`` differ from it, ``+unknown`` when that could not be told), how many results it
wrote, and the load average at its start, its end and the highest seen after each result.

``ended_as`` says how it ended: ``done`` (every question it was given has a result, apart
from ``held_back`` ones whose model call failed), ``stopped`` (too many model failures),
``interrupted`` (Ctrl-C), ``failed`` (an unexpected error), ``running`` (a report written while
it ran) or ``ended unrecorded`` (a ``running`` record carried on by ``--continue``: that
sitting was killed without writing its end, so ``ended`` is only its last report).

The load average counts every runnable process, a local model server's threads included, so a
load near the number of threads the model decodes with is the evaluation alone.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from agents.core.paths import REPO_ROOT
from .records import utc_now

SITTINGS_FILE = "sittings.jsonl"
LOAD_COLUMNS = ("load_start", "load_max", "load_end")


def code_version(root: Path = REPO_ROOT) -> str | None:
    """The commit ``root`` is checked out at (short hash), with ``+changes`` when the files
    under ``agents/`` differ from it and ``+unknown`` when git could not say; None when
    ``root`` is not itself the top of a git checkout or git is not there."""
    def git(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", "--no-optional-locks", "-C", str(root), *args],
                              capture_output=True, text=True, errors="replace", timeout=10)
    try:
        top = git("rev-parse", "--show-toplevel")
        if top.returncode != 0 or Path(top.stdout.strip()).resolve() != Path(root).resolve():
            return None  # not a checkout, or one that merely encloses root
        head = git("rev-parse", "--short", "HEAD")
        if head.returncode != 0:
            return None
        status = git("status", "--porcelain", "--", "agents")
    except (OSError, ValueError, subprocess.SubprocessError):
        return None
    if status.returncode != 0:
        return head.stdout.strip() + "+unknown"
    return head.stdout.strip() + ("+changes" if status.stdout.strip() else "")


def _load() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):  # not every platform has a load average
        return None


class Sitting:
    """One invocation's record: :meth:`count_result` after each result, :meth:`so_far` for a
    report written while it runs, :meth:`finish` once at the end (also when stopped)."""

    def __init__(self, code: str | None = None):
        load = _load()
        self.record = {"started": utc_now(), "ended": None,
                       "code": code if code is not None else code_version(),
                       "results": 0, "load_start": load, "load_end": None, "load_max": load}

    def count_result(self) -> None:
        self.record["results"] += 1
        self._saw(_load())

    def _saw(self, load: float | None) -> None:
        if load is not None:
            self.record["load_max"] = max(load, self.record["load_max"] or 0)

    def so_far(self) -> dict:
        """The record as if the sitting ended now, ``ended_as`` ``running``."""
        load = _load()
        self._saw(load)
        return {**self.record, "ended": utc_now(), "load_end": load, "ended_as": "running"}

    def finish(self, ended_as: str = "done", **extra) -> dict:
        load = _load()
        self._saw(load)
        self.record.update(ended=utc_now(), load_end=load, ended_as=ended_as, **extra)
        return dict(self.record)


def carried_on(sittings: list) -> list[dict]:
    """Earlier sittings as a continued measurement keeps them: a ``running`` one was killed
    before it could write its end, which is said instead of leaving it ``running``."""
    return [{**s, "ended_as": "ended unrecorded"} if s.get("ended_as") == "running" else s
            for s in sittings if isinstance(s, dict)]


def record_sitting(out: Path, record: dict) -> str | None:
    """Append ``record`` to the folder's ``sittings.jsonl``; a message when that failed (the
    evaluation's results are kept either way)."""
    try:
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        with (out / SITTINGS_FILE).open("a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")
    except OSError as exc:
        return f"the sitting could not be recorded in {out / SITTINGS_FILE}: {exc}"
    return None


def read_sittings(out: Path) -> list[dict]:
    """The folder's sittings, oldest first; lines that do not parse are skipped."""
    try:
        text = (Path(out) / SITTINGS_FILE).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    records = []
    for raw in text.splitlines():
        try:
            records.append(json.loads(raw))
        except ValueError:
            continue
    return [r for r in records if isinstance(r, dict)]


def _load_text(value) -> str:
    return f"{value:.2f}" if isinstance(value, (int, float)) else ""


def sittings_markdown(sittings: list) -> list[str]:
    """The report's table of sittings (no lines when there are none)."""
    sittings = [s for s in sittings if isinstance(s, dict)]
    if not sittings:
        return []
    lines = ["", "## Sittings", "",
             "Each invocation that wrote into this folder. Load average: 1-minute, at the start, "
             "the highest seen after a result, and at the end (a local model server's threads "
             "count too).", "",
             "| started | ended | code | results | ended as | load start / max / end |",
             "| --- | --- | --- | --- | --- | --- |"]
    for s in sittings:
        load = " / ".join(_load_text(s.get(k)) for k in LOAD_COLUMNS)
        lines.append(f"| {s.get('started') or ''} | {s.get('ended') or ''} | "
                     f"{s.get('code') or 'unknown'} | {s.get('results', '')} | "
                     f"{s.get('ended_as') or ''} | {load} |")
    return lines
