"""A running step's model output, as it is written: from the engine, through a job, to a stop,
and two runs sharing one model."""

from __future__ import annotations

import time

from agents.db.database import open_database
from agents.core.engine import run_to_end, start_run
from agents.core.events import RunFinished, StepEvent, StepPartial, StepStarted
from agents.core.jobs import run_job, stop_job
from agents.pipelines import get_pipeline

TOP5 = "SELECT name FROM products ORDER BY price DESC LIMIT 5"
ANSWER = f"The five dearest products:\n```sql\n{TOP5}\n```"


def _wait_for(predicate, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_partial_events_arrive_before_the_step_ends_and_join_to_its_raw_output(
        scripted_llm, llm, sample_dbs):
    scripted_llm.push({"content": ANSWER, "chunk_delay": 0.02})
    log: list = []
    with open_database(sample_dbs / "shop.sqlite") as db:
        for item in start_run(get_pipeline("baseline"), "q", db, llm, on_partial=log.append):
            log.append(item)
    kinds = [type(item).__name__ for item in log]
    assert kinds[0] == "StepStarted" and kinds[-1] == "RunFinished"
    event = next(item for item in log if isinstance(item, StepEvent))
    partials = [item for item in log if isinstance(item, StepPartial)]
    assert len(partials) > 3
    assert max(log.index(p) for p in partials) < log.index(event)  # all before the step ended
    assert {(p.index, p.step, p.call) for p in partials} == {(0, event.step, 1)}
    assert "".join(p.delta for p in partials) == partials[-1].text == event.calls[0].raw == ANSWER
    run = log[-1].run
    assert run.status == "done" and run.final_sql == TOP5
    assert "StepPartial" not in str(run.to_dict())  # partial output is never stored


def test_runs_without_a_listener_are_unchanged(scripted_llm, llm, sample_dbs):
    scripted_llm.push(ANSWER)
    with open_database(sample_dbs / "shop.sqlite") as db:
        run = run_to_end(start_run(get_pipeline("baseline"), "q", db, llm))
    assert run.status == "done" and run.events[0].calls[0].raw == ANSWER
    assert run.events[0].calls[0].completion_tokens == len(ANSWER.split())


def test_a_job_keeps_only_the_latest_partial_of_a_running_step(scripted_llm, llm, sample_dbs):
    scripted_llm.push({"content": ANSWER, "hang": 10.0, "hang_after": 3})
    with open_database(sample_dbs / "shop.sqlite") as db:
        job = run_job("baseline", lambda control: start_run(
            get_pipeline("baseline"), "q", db, llm, control=control), lambda run: None)
        _wait_for(lambda: job.partial("baseline", 0) is not None
                  and job.partial("baseline", 0).text.count(" ") >= 2)
        assert [type(item).__name__ for _, item in job.items] == ["StepStarted"]
        partial = job.partial("baseline", 0)
        assert ANSWER.startswith(partial.text) and partial.waiting is None
        run = stop_job(job, lambda run: None)
        # stopping closed the connection: the server saw the client go and stops writing
        _wait_for(lambda: scripted_llm.disconnects == 1)
        job.thread.join(timeout=10)
    assert run.status == "stopped" and not job.thread.is_alive()
    assert len(scripted_llm.requests) == 1


def test_two_runs_at_once_are_served_in_order_and_the_second_says_it_waits(
        scripted_llm, llm, sample_dbs):
    scripted_llm.when("first question", {"content": ANSWER, "delay": 1.0})
    scripted_llm.when("second question", {"content": ANSWER, "delay": 0.2})
    pipeline = get_pipeline("baseline")
    with open_database(sample_dbs / "shop.sqlite") as db:
        first = run_job("baseline", lambda control: start_run(
            pipeline, "first question", db, llm, control=control), lambda run: None)
        _wait_for(lambda: len(scripted_llm.requests) == 1)
        waits: list[int | None] = []
        second = run_job("baseline", lambda control: start_run(
            pipeline, "second question", db, llm, control=control), lambda run: None)
        _wait_for(lambda: second.partial("baseline", 0) is not None)
        waits.append(second.partial("baseline", 0).waiting)
        _wait_for(lambda: first.finished and second.finished, timeout=20)
    assert waits == [1]  # "waiting for the model: 1 run ahead"
    assert first.result.status == second.result.status == "done"
    assert scripted_llm.max_active == 1
    assert ["first question" in str(r["messages"]) for r in scripted_llm.requests] == [True,
                                                                                       False]
    for job in (first, second):
        assert [type(item) for _, item in job.items] == [StepStarted, StepEvent, RunFinished]
        assert job.partials == {}
