"""Evaluation questions in the Spider (or BIRD) folder layout, and the seeded sample of them.

A dataset folder holds a questions file (``dev.json``: ``db_id``, ``question``, gold ``query`` or
BIRD's ``SQL``, optional ``evidence`` and ``hardness``/``difficulty``) and one SQLite file per
database at ``database/<db_id>/<db_id>.sqlite`` (BIRD: ``dev_databases/``). A question whose
database file is absent cannot be scored: it is kept in :attr:`Dataset.missing` so every report
can say how many were left out and why, instead of quietly shrinking the denominator.

The sample is a pure function of (questions, limit, mode, seed, excluded ids), so every
pipeline of one evaluation -- and every resumed evaluation -- sees exactly the same questions.
Excluding the questions of another sample draws a second one that shares none with it.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Collection

SAMPLE_MODES = ("stratified", "first", "random")
HARDNESS_ORDER = ("easy", "medium", "hard", "extra", "simple", "moderate", "challenging")
DATABASE_DIRS = ("database", "dev_databases", "databases")


class DatasetError(ValueError):
    """The dataset folder or file is unusable; the message says what is wrong and where."""


@dataclass
class Question:
    qid: int
    db_id: str
    question: str
    gold_sql: str
    evidence: str = ""
    hardness: str = ""
    db_path: str | None = None  # None: the database file is not in the folder

    def to_dict(self) -> dict:
        return {"question_id": self.qid, "db_id": self.db_id, "question": self.question,
                "gold_sql": self.gold_sql, "evidence": self.evidence, "hardness": self.hardness}


@dataclass
class Dataset:
    name: str
    root: str
    questions: list[Question]
    missing: list[Question] = field(default_factory=list)

    @property
    def total(self) -> int:
        return len(self.questions) + len(self.missing)

    def missing_by_db(self) -> dict[str, int]:
        return dict(sorted(Counter(q.db_id for q in self.missing).items()))

    def hardness_counts(self) -> dict[str, int]:
        return order_hardness(Counter(q.hardness for q in self.questions))


def load_dataset(path: str | Path, questions_file: str = "dev.json") -> Dataset:
    """Read a dataset folder (or a questions JSON file directly; its folder is the root)."""
    path = Path(path).expanduser()
    if path.is_file():
        root, qfile = path.parent, path
    elif path.is_dir():
        root, qfile = path, path / questions_file
    else:
        raise DatasetError(f"dataset folder not found: {path}")
    if not qfile.is_file():
        raise DatasetError(f"no {qfile.name} in {root}: expected a Spider-format folder "
                           "(dev.json, tables.json, database/<db_id>/<db_id>.sqlite)")
    try:
        items = json.loads(qfile.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DatasetError(f"{qfile} is not valid JSON: {exc}") from None
    if not isinstance(items, list):
        raise DatasetError(f"{qfile} must hold a JSON list of questions")

    db_root = next((root / d for d in DATABASE_DIRS if (root / d).is_dir()), root / "database")
    present: dict[str, str | None] = {}
    questions: list[Question] = []
    missing: list[Question] = []
    for index, item in enumerate(items):
        q = _question(item, index, qfile)
        if q.db_id not in present:
            db_file = db_root / q.db_id / f"{q.db_id}.sqlite"
            present[q.db_id] = str(db_file) if db_file.is_file() else None
        q.db_path = present[q.db_id]
        (questions if q.db_path else missing).append(q)
    return Dataset(name=root.name, root=str(root), questions=questions, missing=missing)


def _question(item: object, index: int, qfile: Path) -> Question:
    if not isinstance(item, dict):
        raise DatasetError(f"{qfile.name}, entry {index}: expected an object")
    gold = item.get("query", item.get("SQL"))
    for key, value in (("db_id", item.get("db_id")), ("question", item.get("question")),
                       ("query", gold)):
        if not isinstance(value, str) or not value.strip():
            raise DatasetError(f"{qfile.name}, entry {index}: missing or empty '{key}'")
    qid = item.get("question_id", index)
    if not isinstance(qid, int):
        raise DatasetError(f"{qfile.name}, entry {index}: question_id must be a number")
    return Question(qid=qid, db_id=item["db_id"], question=item["question"].strip(),
                    gold_sql=gold.strip(), evidence=str(item.get("evidence") or "").strip(),
                    hardness=str(item.get("hardness") or item.get("difficulty") or "").strip())


def sample_questions(questions: list[Question], limit: int | None = None,
                     mode: str = "stratified", seed: int = 0,
                     exclude: Collection[int] = ()) -> list[Question]:
    """A deterministic sample of ``limit`` questions, returned in dataset order.

    ``stratified`` keeps the hardness mix of the whole set (largest-remainder quotas); ``random``
    is a seeded uniform draw; ``first`` takes the first ``limit``. Both seeded modes shuffle once
    and take a prefix, so a larger limit with the same seed extends a smaller sample (a resumed
    evaluation with a higher --limit reuses the questions already done).

    Question ids in ``exclude`` are never drawn. They are skipped where they fall in the seeded
    order, and the quotas still follow the whole set, so excluding questions a sample did not
    hold leaves it unchanged, and two samples that exclude each other keep the same mix.
    """
    if mode not in SAMPLE_MODES:
        raise DatasetError(f"sample mode must be one of {', '.join(SAMPLE_MODES)}, not {mode!r}")
    if limit is not None and limit < 0:
        raise DatasetError("limit must be 0 or more")
    excluded = set(exclude)
    pool = [q for q in questions if q.qid not in excluded]
    if limit is None or limit >= len(pool):
        return pool
    if mode == "first":
        return pool[:limit]
    position = {id(q): i for i, q in enumerate(questions)}
    if mode == "random":
        shuffled = list(questions)
        random.Random(f"{seed}").shuffle(shuffled)
        chosen = [q for q in shuffled if q.qid not in excluded][:limit]
    else:
        groups: dict[str, list[Question]] = {}
        for q in questions:
            groups.setdefault(q.hardness, []).append(q)
        quotas = _quotas({h: len(g) for h, g in groups.items()}, limit)
        left = {h: sum(q.qid not in excluded for q in g) for h, g in groups.items()}
        quotas = _refill({h: min(quotas[h], left[h]) for h in groups}, left, limit)
        chosen = []
        for hardness, group in groups.items():
            shuffled = list(group)
            random.Random(f"{seed}:{hardness}").shuffle(shuffled)
            chosen.extend([q for q in shuffled if q.qid not in excluded][:quotas[hardness]])
    return sorted(chosen, key=lambda q: position[id(q)])


@dataclass(frozen=True)
class SampleSpec:
    """A sample named as ``[MODE:]SEED:LIMIT`` (``stratified:7:100`` or ``7:100``)."""

    mode: str
    seed: int
    limit: int

    @classmethod
    def parse(cls, text: str, default_mode: str = "stratified") -> "SampleSpec":
        parts = text.strip().split(":")
        if len(parts) == 2:
            parts = [default_mode, *parts]
        try:
            mode, seed, limit = parts[0].strip(), int(parts[1]), int(parts[2])
        except (ValueError, IndexError):
            raise DatasetError(f"a sample is written [MODE:]SEED:LIMIT, not {text!r}") from None
        if mode not in SAMPLE_MODES or len(parts) != 3 or limit < 0:
            raise DatasetError(f"a sample is written [MODE:]SEED:LIMIT with MODE one of "
                               f"{', '.join(SAMPLE_MODES)} and LIMIT 0 or more, not {text!r}")
        return cls(mode, seed, limit)

    def __str__(self) -> str:
        return f"{self.mode}:{self.seed}:{self.limit}"

    def draw(self, questions: list[Question], exclude: Collection[int] = ()) -> list[Question]:
        return sample_questions(questions, self.limit, self.mode, self.seed, exclude)


def _quotas(sizes: dict[str, int], limit: int) -> dict[str, int]:
    """Split ``limit`` over groups in proportion to their sizes (largest remainder)."""
    total = sum(sizes.values())
    exact = {h: limit * n / total for h, n in sizes.items()}
    quotas = {h: int(v) for h, v in exact.items()}
    rest = limit - sum(quotas.values())
    ranked = sorted(sizes, key=lambda h: (-(exact[h] - quotas[h]), _hardness_rank(h)))
    for h in ranked[:rest]:
        quotas[h] += 1
    return quotas


def _refill(quotas: dict[str, int], left: dict[str, int], limit: int) -> dict[str, int]:
    """Quotas cut to what exclusion left of each level, the shortfall spread over the levels
    that have questions to spare (in proportion to the spare, largest remainder)."""
    short = limit - sum(quotas.values())
    spare = {h: left[h] - quotas[h] for h in quotas if left[h] > quotas[h]}
    if short <= 0 or not spare:
        return quotas
    extra = _quotas(spare, min(short, sum(spare.values())))
    return {h: quotas[h] + extra.get(h, 0) for h in quotas}


def _hardness_rank(hardness: str) -> tuple[int, str]:
    return (HARDNESS_ORDER.index(hardness) if hardness in HARDNESS_ORDER
            else len(HARDNESS_ORDER), hardness)


def order_hardness(counts: dict[str, int]) -> dict[str, int]:
    """The same mapping with hardness levels in their natural order (easy ... extra)."""
    return {h: counts[h] for h in sorted(counts, key=_hardness_rank)}
