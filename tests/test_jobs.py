"""The one job runner of the Ask and Compare pages, and the engine's stop."""

from __future__ import annotations

import threading
import time

from agents.runs.compare import compare
from agents.db.database import open_database
from agents.core.engine import resume_run, run_to_end, start_run
from agents.core.jobs import run_job, start_job, stop_job
from agents.pipelines import get_pipeline

TOP5 = "SELECT name FROM products ORDER BY price DESC LIMIT 5"


def _wait_for(predicate, timeout: float = 10.0) -> None:
    deadline = time.time() + timeout
    while not predicate():
        assert time.time() < deadline, "timed out"
        time.sleep(0.01)


def test_stop_finalizes_a_stopped_run_without_waiting_for_the_model(scripted_llm, llm,
                                                                   sample_dbs):
    scripted_llm.push({"content": f"```sql\n{TOP5}\n```", "delay": 3})
    saved = []
    pipeline = get_pipeline("baseline")
    with open_database(sample_dbs / "shop.sqlite") as db:
        job = run_job("baseline", lambda control: start_run(pipeline, "q", db, llm,
                                                            control=control), saved.append)
        _wait_for(lambda: job.items)
        t0 = time.perf_counter()
        run = stop_job(job, saved.append)
        assert time.perf_counter() - t0 < 2
        assert run.status == "stopped" and run.error == "stopped by the user"
        assert saved == [run]
        job.thread.join(timeout=10)
    assert saved == [run]  # the abandoned worker does not save a second version
    assert job.result is run and job.finished
    assert not [t for t in threading.enumerate() if t.name.startswith("job-") and t.is_alive()]


def test_a_stopped_run_keeps_its_steps_and_executes_its_last_sql(scripted_llm, llm, sample_dbs):
    """MAC-SQL stopped while the Refiner's model call is in flight: the Decomposer's SQL is the
    run's last SQL, and the stopped run holds its result."""
    with open_database(sample_dbs / "shop.sqlite") as db:
        first = run_to_end(start_run(get_pipeline("macsql"), "q", db, _Offline(TOP5),
                                     params={"use_selector": "never",
                                             "value_grounding": "off"}))
        assert [e.step for e in first.events] == ["selector", "decomposer", "refiner"]
        # resume from the Refiner with a failing SQL, so it asks the (slow) model to repair it
        data = dict(first.events[1].data, sql="SELECT nope FROM products")
        scripted_llm.push({"content": f"```sql\n{TOP5}\n```", "delay": 3})
        job = run_job("macsql", lambda control: resume_run(
            get_pipeline("macsql"), first, 2, db, llm, data=data, control=control),
            lambda run: None)
        assert [e.step for e in job.control.run.events] == ["selector", "decomposer"]
        _wait_for(lambda: scripted_llm.remaining == 0)  # the Refiner's model call is in flight
        run = stop_job(job, lambda run: None)
    assert run.status == "stopped"
    # The stop ends the model call at once, so the engine usually records the Refiner as
    # stopped itself; on a slow machine the run is finished from outside without it.
    steps = [e.step for e in run.events]
    assert steps in (["selector", "decomposer"], ["selector", "decomposer", "refiner"])
    if len(steps) == 3:
        assert run.events[2].error == "stopped by the user"
    assert run.final_sql == "SELECT nope FROM products"
    assert run.result and run.result["ok"] is False and "nope" in run.result["error"]


def test_a_comparison_runs_in_the_same_job_and_stops_its_remaining_pipelines(sample_dbs):
    llm = _Offline(TOP5, delay=0.3)
    with open_database(sample_dbs / "shop.sqlite") as db:
        saved = []
        job = start_job("comparison", lambda job: compare(
            ["baseline", "macsql", "r3"], "q", db, llm, on_item=job.emit,
            cancel=job.control.cancel), saved.append)
        _wait_for(lambda: any(name == "macsql" for name, _ in job.items))
        stop_job(job, saved.append)
        _wait_for(lambda: job.finished)
    result = job.result
    assert saved == [result]
    assert [o.pipeline for o in result.outcomes] == ["baseline", "macsql", "r3"]
    assert result.outcomes[0].status == "done"
    assert result.outcomes[2].status == "stopped"
    assert [e.error for e in result.outcomes[2].run.events] == ["stopped by the user"]


class _Offline:
    """A stand-in model that always answers with one SQL block, after ``delay`` seconds."""

    model = "offline"

    def __init__(self, sql: str, delay: float = 0.0):
        self.sql, self.delay = sql, delay

    def chat(self, messages, **_):
        from agents.llm.client import LLMReply

        time.sleep(self.delay)
        return LLMReply(text=f"```sql\n{self.sql}\n```", model=self.model, prompt_tokens=1,
                        completion_tokens=1, seconds=self.delay, cached=False)

