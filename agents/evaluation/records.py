"""The results file of an evaluation: one JSON line per (question, pipeline), written as it goes.

Each line is self-contained -- the question, the gold SQL, the verdict, previews of both results
and the pipeline's full trace (``Run.to_dict()``) -- so a reader needs nothing else to inspect a
failure, and an interrupted evaluation loses at most the line being written. A torn last line
(the process died mid-write) is cut off before new lines are appended.
"""

from __future__ import annotations

import json
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import BinaryIO, Iterable, Iterator

from agents.core.events import Run
from agents.pipelines import load_run

RESULTS_FILE = "results.jsonl"


def utc_now() -> str:
    """Now in UTC, to the second (ISO 8601): every time an evaluation writes down."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def record_key(record: dict) -> tuple[int, str]:
    return (record["question_id"], record["pipeline"])


class ResultsFile:
    """Append-only JSONL with crash-tolerant reading; appends are serialised by a lock."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._lock = threading.Lock()

    def read(self) -> list[dict]:
        """All complete records, the last one per key winning (bad lines are skipped)."""
        if not self.path.is_file():
            return []
        return dedupe(parse_lines(self.path.read_text(encoding="utf-8").splitlines()))

    def repair(self) -> bool:
        """Cut a torn last line left by an interrupted write; True when something was cut."""
        if not self.path.is_file():
            return False
        data = self.path.read_bytes()
        if not data or data.endswith(b"\n"):
            return False
        cut = data.rfind(b"\n") + 1
        tail = data[cut:]
        try:
            json.loads(tail)
            with self.path.open("ab") as fh:  # a complete record that only lacks its newline
                fh.write(b"\n")
            return False
        except ValueError:
            with self.path.open("r+b") as fh:
                fh.truncate(cut)
            return True

    def append(self, record: dict) -> None:
        line = json.dumps(record, ensure_ascii=False, default=str)
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as fh:
                fh.write(line + "\n")
                fh.flush()


def parse_lines(lines: Iterable[str | bytes]) -> Iterator[dict]:
    """Records from JSONL text lines; blank, torn or foreign lines are skipped."""
    for line in lines:
        if isinstance(line, bytes):
            line = line.decode("utf-8", errors="replace")
        line = line.strip()
        if not line:
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and "question_id" in record and "pipeline" in record:
            yield record


def dedupe(records: Iterable[dict]) -> list[dict]:
    latest: dict[tuple, dict] = {}
    for record in records:
        latest[record_key(record)] = record
    return list(latest.values())


def scan_light(fh: BinaryIO) -> list[dict]:
    """Records without their run traces, each with ``_offset``/``_length`` of its line.

    Results files of a full benchmark reach hundreds of megabytes, almost all of it traces; a
    viewer keeps these light records and reads one trace with :func:`read_full` when asked.
    """
    found = []
    offset = 0
    for line in fh:
        for record in parse_lines([line]):
            record.pop("run", None)
            record["_offset"], record["_length"] = offset, len(line)
            found.append(record)
        offset += len(line)
    return dedupe(found)


def read_full(fh: BinaryIO, light: dict) -> dict:
    """The complete record (with its trace) behind a light record from :func:`scan_light`."""
    fh.seek(light["_offset"])
    records = list(parse_lines([fh.read(light["_length"])]))
    if not records:
        raise ValueError(f"the results line of question {light.get('question_id')} "
                         f"({light.get('pipeline')}) changed or cannot be read")
    return records[0]


def find_result_folders(root: str | Path) -> list[Path]:
    """Folders under ``root`` holding a results file, most recently written first."""
    root = Path(root)
    if not root.is_dir():
        return []
    files = [p for p in root.rglob(RESULTS_FILE) if p.is_file()]
    files.sort(key=lambda p: p.stat().st_mtime, reverse=True)
    return [p.parent for p in files]


def record_to_run(record: dict) -> Run:
    """The pipeline run stored in a record, ready to be saved into the run store."""
    trace = record.get("run")
    if not isinstance(trace, dict):
        raise ValueError(f"question {record.get('question_id')} ({record.get('pipeline')}) "
                         "has no run trace")
    return load_run(trace)
