"""When, with which code and beside how much other load each part of an evaluation ran.

An evaluation of a slow pipeline on a 2-core machine is often run in several sittings (stopped,
then resumed into the same folder), sometimes with other work on the CPU. Its seconds per
question only mean something together with that history, and writing it down by hand after the
fact is how it goes wrong. So every ``agents eval`` invocation appends one line to the output
folder's ``sittings.jsonl``: start and end (UTC), the code it ran (the git commit, and whether
the engine's own files differed from it), how many results it wrote, and the load average at
its start, its end and the highest seen after each question. The report lists them.

The load average counts every runnable process, the evaluation's own model server included,
so on this machine about 2 means the model alone and anything well above it means sharing.
"""

from __future__ import annotations

import json
import os
import subprocess
from datetime import datetime, timezone
from pathlib import Path

from ..paths import REPO_ROOT

SITTINGS_FILE = "sittings.jsonl"


def code_version(root: Path = REPO_ROOT) -> str | None:
    """The commit the code runs from (short hash), with ``+changes`` when the files under
    ``agents/`` differ from it; None outside a git checkout."""
    def git(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                              timeout=10)
    try:
        head = git("rev-parse", "--short", "HEAD")
        if head.returncode != 0:
            return None
        changed = git("status", "--porcelain", "--", "agents").stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return head.stdout.strip() + ("+changes" if changed else "")


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _load() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):  # not every platform has a load average
        return None


class Sitting:
    """One invocation's record: :meth:`saw_question` after each result, :meth:`so_far` for a
    report written while it runs, :meth:`finish` once at the end (also when stopped)."""

    def __init__(self, code: str | None = None):
        load = _load()
        self.line = {"started": _now(), "ended": None,
                     "code": code if code is not None else code_version(),
                     "written": 0, "load_start": load, "load_end": None, "load_max": load}

    def saw_question(self) -> None:
        self.line["written"] += 1
        load = _load()
        if load is not None:
            self.line["load_max"] = max(load, self.line["load_max"] or 0)

    def so_far(self) -> dict:
        """The record as if the sitting ended now (``ended_as``: ``running``)."""
        return {**self.line, "ended": _now(), "load_end": _load(), "ended_as": "running"}

    def finish(self, ended_as: str = "done") -> dict:
        self.line.update(ended=_now(), load_end=_load(), ended_as=ended_as)
        return dict(self.line)


def record_sitting(out: Path, line: dict) -> None:
    """Append ``line`` to the folder's ``sittings.jsonl``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    with (out / SITTINGS_FILE).open("a", encoding="utf-8") as f:
        f.write(json.dumps(line) + "\n")


def read_sittings(out: Path) -> list[dict]:
    """The folder's sittings, oldest first; lines that do not parse are skipped."""
    try:
        text = (Path(out) / SITTINGS_FILE).read_text(encoding="utf-8")
    except OSError:
        return []
    lines = []
    for raw in text.splitlines():
        try:
            lines.append(json.loads(raw))
        except ValueError:
            continue
    return [line for line in lines if isinstance(line, dict)]


def sittings_markdown(sittings: list[dict]) -> list[str]:
    """The report's table of sittings (no lines when there are none)."""
    if not sittings:
        return []
    lines = ["", "## Sittings", "",
             "Each invocation that wrote into this folder. Load average: 1-minute, at the start, "
             "the highest seen after a question, and at the end (the model server counts: about "
             "2 on a 2-core machine is the evaluation alone).", "",
             "| started | ended | code | results written | ended as | load start / max / end |",
             "| --- | --- | --- | --- | --- | --- |"]
    for s in sittings:
        load = " / ".join("" if s.get(k) is None else f"{s[k]:.2f}"
                          for k in ("load_start", "load_max", "load_end"))
        lines.append(f"| {s.get('started') or ''} | {s.get('ended') or ''} | "
                     f"{s.get('code') or 'unknown'} | {s.get('written', '')} | "
                     f"{s.get('ended_as') or ''} | {load} |")
    return lines
