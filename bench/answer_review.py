"""What the answer's review says about recorded answers: how often a doubt, a refusal or an
explained empty result falls on a wrong answer, and how often on a right one.

Reads the per-question results of committed evaluations (their predicted SQL, scored against
the gold), runs each prediction again under the evaluation's limits and makes the review the
engine now makes when a run ends (:func:`agents.answer.review.review_answer`). No model is
called; only counts are reported, no question is printed, so a sample read this way stays
unread. Gold SQL is reviewed too: a doubt on gold is a false alarm (or a gold error).

    python bench/answer_review.py bench/results/fresh-seed11 bench/results/renamed-spider-unread

Writes ``bench/results/answer-review.json``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agents.answer.review import review_answer  # noqa: E402
from agents.core.engine import ExecLimits  # noqa: E402
from agents.db.database import open_database  # noqa: E402


def _database(folder: Path, db_id: str, cache: dict):
    manifest = json.loads((folder / "manifest.json").read_text())
    root = Path(manifest["dataset"])
    for path in (root / "database" / db_id / f"{db_id}.sqlite",
                 ROOT / root / "database" / db_id / f"{db_id}.sqlite"):
        if path.exists():
            if path not in cache:
                cache[path] = open_database(path)
            return cache[path]
    return None


def review_folder(folder: Path, cache: dict) -> dict:
    limits = ExecLimits()
    table: dict = {}
    for line in (folder / "results.jsonl").read_text().splitlines():
        record = json.loads(line)
        db = _database(folder, record["db_id"], cache)
        if db is None or not record.get("pred_sql"):
            continue
        counts = table.setdefault(record["pipeline"], {
            "n": 0, "wrong": 0, "doubt_wrong": 0, "doubt_right": 0, "refused_wrong": 0,
            "refused_right": 0, "empty_explained_wrong": 0, "empty_explained_right": 0,
            "behind": 0, "gold_doubts": 0})
        result = db.execute(record["pred_sql"], timeout=limits.timeout,
                            max_rows=limits.max_rows).preview(rows=limits.max_rows)
        review = review_answer(record["question"], record["pred_sql"], result, db, limits)
        right = "right" if record.get("correct") else "wrong"
        counts["n"] += 1
        counts["wrong"] += right == "wrong"
        if review.get("doubt"):
            counts[f"doubt_{right}"] += 1
        if review.get("answerable") is False:
            counts[f"refused_{right}"] += 1
        if review.get("empty"):
            counts[f"empty_explained_{right}"] += 1
        counts["behind"] += bool(review.get("behind"))
        gold = db.execute(record["gold_sql"], timeout=limits.timeout,
                          max_rows=limits.max_rows).preview(rows=limits.max_rows)
        if review_answer(record["question"], record["gold_sql"], gold, db, limits).get("doubt"):
            counts["gold_doubts"] += 1
    return {"folder": str(folder.relative_to(ROOT) if folder.is_relative_to(ROOT) else folder),
            "pipelines": table}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="+")
    parser.add_argument("--out", default=str(ROOT / "bench/results/answer-review.json"))
    args = parser.parse_args(argv)
    cache: dict = {}
    folders = [review_folder(Path(f).resolve(), cache) for f in args.folders]
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, cwd=ROOT).stdout.strip()
    report = {"folders": folders, "commit": commit,
              "date": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
