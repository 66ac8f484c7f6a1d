"""Seconds the evaluation harness spends per question when no model is involved.

``python bench/scoring_speed.py [DATA_DIR] [--limit N]`` answers every executable question of a
Spider-format dev set (default ``../shared/data/spider``) with its own gold SQL and runs it through
the harness: safe execution of both queries, test-suite comparison, the results file and the
report. Execution accuracy must then be 100%; what the run measures is the cost of everything
around the model, which the pipelines' seconds per question include. Prints one JSON object;
nothing is written outside a temporary folder.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agents.evaluation.dataset import load_dataset  # noqa: E402
from agents.evaluation.gold import GoldPipeline  # noqa: E402
from agents.evaluation.harness import EvalOptions, run_evaluation  # noqa: E402
from agents.evaluation.records import RESULTS_FILE, ResultsFile  # noqa: E402

DEFAULT_DATA = ROOT.parent / "shared" / "data" / "spider"


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", nargs="?", default=str(DEFAULT_DATA),
                        help="Spider-format dataset folder (default: %(default)s)")
    parser.add_argument("--limit", type=int, default=None, help="first N questions only")
    args = parser.parse_args(argv)
    questions = load_dataset(args.data).questions[:args.limit]
    with tempfile.TemporaryDirectory(prefix="scoring-speed-") as out:
        t0 = time.perf_counter()
        run_evaluation(questions, [GoldPipeline(questions)], None, out, EvalOptions(),
                       log=lambda line: None)
        seconds = time.perf_counter() - t0
        records = ResultsFile(Path(out) / RESULTS_FILE).read()
    correct = sum(r["correct"] for r in records)
    return {
        "questions": len(records),
        "correct": correct,
        "seconds": round(seconds, 2),
        "ms_per_question": round(1000 * seconds / max(1, len(records)), 1),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, "
                   f"Python {platform.python_version()}",
    }


if __name__ == "__main__":
    print(json.dumps(main(), indent=2))
