"""Spider dev without every question a committed evaluation holds: the pool new samples are
drawn from, so a sample is one nobody studied.

``--exclude-sample`` leaves out one earlier sample, but the later samples were themselves drawn
with exclusions, so redrawing them alone does not give back their questions. This script leaves
out what the committed results actually hold instead: every question of
``bench/results/*/results.jsonl`` on Spider dev or on its renamed copy (whose questions are Spider
dev's, renamed). The pool is written as a dataset folder (``dev.json``, with each question's own
``question_id`` kept, beside links to Spider's ``tables.json`` and databases); nothing of
Spider's is committed::

    python bench/unread_pool.py --data ../shared/data/spider --out bench/runs/unread-pool
    python -m agents eval --data bench/runs/unread-pool --pipelines selection --limit 30 \\
        --sample stratified --seed 12 --exclude-quoted --provider local --no-cache --out ...
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from unseen_sets import SETS as UNSEEN_DATABASES  # noqa: E402  the databases outside Spider


def held_question_ids(results: Path = ROOT / "bench" / "results") -> set[int]:
    """Question ids of every committed evaluation except those of the databases outside
    Spider (numbered alike, but other questions)."""
    held: set[int] = set()
    for path in results.glob("*/results.jsonl"):
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue
            if not isinstance(row, dict) or str(row.get("db_id", "")).startswith(UNSEEN_DATABASES):
                continue
            if isinstance(row.get("question_id"), int):
                held.add(row["question_id"])
    return held


def write_pool(data: Path, out: Path) -> dict:
    questions = json.loads((data / "dev.json").read_text(encoding="utf-8"))
    held = held_question_ids()
    pool = [dict(item, question_id=index) for index, item in enumerate(questions)
            if index not in held]
    out.mkdir(parents=True, exist_ok=True)
    (out / "dev.json").write_text(json.dumps(pool), encoding="utf-8")
    for name in ("tables.json", "database"):
        link = out / name
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to((data / name).resolve())
    return {"questions": len(questions), "held": len(held), "pool": len(pool)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "spider")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "runs" / "unread-pool")
    args = parser.parse_args()
    print(json.dumps(write_pool(args.data, args.out)))


if __name__ == "__main__":
    sys.exit(main())
