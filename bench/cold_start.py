"""Cold start to the first agent event, with the embedded model.

Run in a fresh process (``python bench/cold_start.py``): measures the seconds from interpreter
start to (1) the engine imported, (2) the embedded model's server answering, (3) the first step
announced and (4) the first agent event completed, on a sample database question. Prints one
JSON object; nothing is asserted, it is a measurement. Where the pipeline shows a draft answer
(candidate selection), (5) the draft answer on screen is timed too: it is the first answer a user
sees.

``python bench/cold_start.py macsql --warm`` reads the pipeline's prompt prefix first, as the
Ask page does while the question is typed (:mod:`agents.core.warmup`), and then asks: the
figures after ``question_asked_s`` are the wait of a user who typed for longer than that.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

T0 = time.perf_counter()
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agents.core.config import Settings
from agents.db.database import open_database
from agents.core.engine import start_run
from agents.core.events import RunFinished, StepEvent, StepStarted
from agents.core.warmup import first_prompt_prefix, warm
from agents.llm.client import make_client
from agents.pipelines import get_pipeline  # noqa: E402
from agents.runs.draft import is_draft  # noqa: E402
from sample_dbs.build import build_all  # noqa: E402


def main() -> None:
    t_import = time.perf_counter() - T0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pipeline", nargs="?", default="macsql")
    parser.add_argument("--warm", action="store_true",
                        help="read the prompt prefix first, then ask")
    parser.add_argument("--db", help="another database (default: the shop sample)")
    parser.add_argument("--question", default="How many customers are there in each country?")
    args = parser.parse_args()
    warm_first, pipeline_name, question = args.warm, args.pipeline, args.question
    pipeline = get_pipeline(pipeline_name)
    db_dir = ROOT / "sample_dbs"
    if not args.db and not (db_dir / "shop.sqlite").exists():
        build_all(db_dir)
    db = open_database(args.db or db_dir / "shop.sqlite")
    client = make_client(Settings(provider="local", cache=False))
    t_model = time.perf_counter() - T0
    marks: dict[str, float] = {}
    if warm_first:
        prefix = first_prompt_prefix(pipeline, db, client)
        if prefix:  # else nothing to read ahead: the question comes first, or retrieval cuts
            seconds, tokens = warm(client, prefix)
            marks.update(prefix_read_s=seconds, prefix_tokens=tokens)
    t_question = time.perf_counter() - T0
    if warm_first:
        marks["question_asked_s"] = t_question
    for item in start_run(pipeline, question, db, client):
        now = time.perf_counter() - T0
        if isinstance(item, StepStarted):
            marks.setdefault("first_step_started_s", now)
        elif isinstance(item, StepEvent):
            marks.setdefault("first_step_event_s", now)
            marks.setdefault("first_step_agent", item.agent)
            if is_draft(item):
                marks.setdefault("draft_answer_s", now)
        elif isinstance(item, RunFinished):
            marks["run_finished_s"] = now
            marks["status"] = item.run.status
    if warm_first:  # what the user waits for once the question is asked
        for name in ("draft_answer_s", "run_finished_s"):
            if name in marks:
                marks[f"{name[:-2]}_after_question_s"] = marks[name] - t_question
    print(json.dumps({
        "pipeline": pipeline_name,
        "question": question,
        "database": db.name,
        "engine_imported_s": round(t_import, 2),
        "model_ready_s": round(t_model, 2),
        **{k: (round(v, 2) if isinstance(v, float) else v) for k, v in marks.items()},
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "model": client.model,
    }, indent=2))


if __name__ == "__main__":
    main()
