"""Cold start to the first agent event, with the embedded model.

Run in a fresh process (``python bench/cold_start.py``): measures the seconds from interpreter
start to (1) the engine imported, (2) the embedded model's server answering, (3) the first step
announced and (4) the first agent event completed, on a sample database question. Prints one
JSON object; nothing is asserted, it is a measurement. Where the pipeline shows a draft answer
(candidate selection), (5) the draft answer on screen is timed too: it is the first answer a user
sees.
"""

from __future__ import annotations

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
from agents.llm.client import make_client
from agents.pipelines import get_pipeline  # noqa: E402
from agents.runs.draft import is_draft  # noqa: E402
from sample_dbs.build import build_all  # noqa: E402


def main() -> None:
    t_import = time.perf_counter() - T0
    pipeline_name = sys.argv[1] if len(sys.argv) > 1 else "macsql"
    db_dir = ROOT / "sample_dbs"
    if not (db_dir / "shop.sqlite").exists():
        build_all(db_dir)
    db = open_database(db_dir / "shop.sqlite")
    client = make_client(Settings(provider="local", cache=False))
    t_model = time.perf_counter() - T0
    marks: dict[str, float] = {}
    question = "How many customers are there in each country?"
    for item in start_run(get_pipeline(pipeline_name), question, db, client):
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
    print(json.dumps({
        "pipeline": pipeline_name,
        "question": question,
        "engine_imported_s": round(t_import, 2),
        "model_ready_s": round(t_model, 2),
        **{k: (round(v, 2) if isinstance(v, float) else v) for k, v in marks.items()},
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "model": client.model,
    }, indent=2))


if __name__ == "__main__":
    main()
