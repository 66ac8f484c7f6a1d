"""How the answerability check decides: wrong refusals of answerable questions, and what it does
with questions the database cannot answer.

Runs the check the engine runs before a pipeline (``agents.answer.opening``) -- the word-level
look, and the model's yes/no where the look found nothing -- on

- Spider dev (every question: answerable by construction),
- Spider dev with renamed tables and columns (``bench/runs/spider-renamed``, build it with
  ``python bench/renamed_spider.py``; answerable too, and named by synonyms),
- ``tests/answerability_questions.json``: questions the sample databases cannot answer, and
  answerable ones sharing few words with their schema.

Writes ``bench/results/answerability.json``. Needs the embedded model (a few minutes: the
model is asked only where the look found nothing).

    python bench/answerability.py
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agents.answer.opening import NAME  # noqa: E402
from agents.core.engine import start_run  # noqa: E402
from agents.core.events import StepEvent, StepStarted  # noqa: E402
from agents.db.database import open_database  # noqa: E402
from agents.llm.client import make_client  # noqa: E402
from agents.pipelines import get_pipeline  # noqa: E402


def verdict(question: str, db, llm, pipeline) -> tuple[str, float]:
    """``passed`` (the words met the schema), ``asked-yes`` or ``asked-no``, and seconds."""
    t0 = time.perf_counter()
    for item in start_run(pipeline, question, db, llm):
        if isinstance(item, StepStarted) and item.step != NAME:
            return "passed", time.perf_counter() - t0  # no model call made
        if isinstance(item, StepEvent):
            answerable = (item.parsed or {}).get("answerable", True)
            return ("asked-yes" if answerable else "asked-no"), time.perf_counter() - t0
    return "passed", time.perf_counter() - t0


def run_set(name: str, items, llm, pipeline, dbs) -> dict:
    counts = {"passed": 0, "asked-yes": 0, "asked-no": 0}
    refused, seconds = [], []
    for question, path in items:
        if path not in dbs:
            dbs[path] = open_database(path)
        got, took = verdict(question, dbs[path], llm, pipeline)
        counts[got] += 1
        if got != "passed":
            seconds.append(took)
        if got == "asked-no":
            refused.append(question)
        print(f"{name}: {got:9s} {question}", flush=True)
    return {"name": name, "n": len(items), **counts, "refused": refused,
            "asked_seconds_mean": round(sum(seconds) / len(seconds), 2) if seconds else None}


def spider_items(data: Path, root: Path):
    items = []
    for q in json.loads(data.read_text()):
        path = root / q["db_id"] / f"{q['db_id']}.sqlite"
        if path.exists():
            items.append((q["question"], str(path)))
    return items


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spider", default=str(ROOT.parent / "shared/data/spider"))
    parser.add_argument("--renamed", default=str(ROOT / "bench/runs/spider-renamed"))
    parser.add_argument("--out", default=str(ROOT / "bench/results/answerability.json"))
    args = parser.parse_args(argv)
    llm, pipeline, dbs = make_client(), get_pipeline("baseline"), {}
    spider, renamed = Path(args.spider), Path(args.renamed)
    own = json.loads((ROOT / "tests/answerability_questions.json").read_text())
    sets = [
        run_set("spider dev (answerable)", spider_items(spider / "dev.json",
                                                        spider / "database"), llm, pipeline, dbs),
        run_set("renamed spider dev (answerable)", spider_items(renamed / "dev.json",
                                                                renamed / "database"),
                llm, pipeline, dbs),
        run_set("sample databases, unanswerable",
                [(q["question"], str(ROOT / f"sample_dbs/{q['db']}.sqlite"))
                 for q in own["unanswerable"]], llm, pipeline, dbs),
        run_set("sample databases, answerable in other words",
                [(q["question"], str(ROOT / f"sample_dbs/{q['db']}.sqlite"))
                 for q in own["answerable"]], llm, pipeline, dbs),
    ]
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, cwd=ROOT).stdout.strip()
    report = {"sets": sets, "model": getattr(llm, "model", ""),
              "machine": f"{platform.machine()}, {platform.system()} {platform.release()}",
              "commit": commit, "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "note": "the check before the run only; an answer refused after the run (a "
                      "constant SQL, a table like none of the database's) is not counted here"}
    Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps({s["name"]: {k: s[k] for k in ("n", "passed", "asked-yes", "asked-no")}
                      for s in sets}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
