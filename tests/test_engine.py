"""The step engine: runs, failures, stops, resuming from any step, parameters, model calls."""

from __future__ import annotations

import sqlite3
import threading

import pytest

from agents.db.database import open_database
from agents.core.engine import (ParamSpec, ParseError, Pipeline, Step, StepError, resume_run,
    run_to_end, start_run)
from agents.core.events import Run, RunFinished, StepEvent, StepStarted
from scripted_llm import last_user_message


def _a(ctx):
    ctx.data["trace"].append("a")
    ctx.data["n"] = 1
    return "b"


def _b(ctx):
    ctx.data["trace"].append("b")
    if ctx.params["mode"] == "fail":
        raise StepError("b cannot go on")
    if ctx.params["mode"] == "boom":
        return 1 // 0
    ctx.data["n"] += ctx.params["add"]
    ctx.set_output(parsed={"n": ctx.data["n"]})
    return "c"


def _c(ctx):
    ctx.data["trace"].append("c")
    ctx.data["sql"] = f"SELECT {ctx.data['n']} AS n"
    result = ctx.execute(ctx.data["sql"])
    ctx.set_output(parsed={"rows": result.row_count}, sql=ctx.data["sql"])
    return None


class Toy(Pipeline):
    name = "toy"
    params = [ParamSpec("add", 10, help="added in step b"),
              ParamSpec("mode", "normal", kind="choice", choices=["normal", "fail", "boom"])]
    steps = [Step("a", "Alpha", _a), Step("b", "Beta", _b), Step("c", "Gamma", _c)]

    def initial_data(self, ctx):
        return {"trace": []}


TOY = Toy()


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "one.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1), (2);")
    conn.close()
    return open_database(path)


def test_a_run_yields_started_and_finished_steps_then_the_run(db):
    items = list(start_run(TOY, "q", db, llm=None))
    kinds = [type(i).__name__ for i in items]
    assert kinds == ["StepStarted", "StepEvent"] * 3 + ["RunFinished"]
    run = items[-1].run
    assert run.status == "done" and run.final_sql == "SELECT 11 AS n"
    assert run.result["rows"] == [[11]]
    assert [e.data["trace"] for e in run.events] == [["a"], ["a", "b"], ["a", "b", "c"]]
    assert [e.next_step for e in run.events] == ["b", "c", None]
    assert Run.from_dict(run.to_dict()).to_dict() == run.to_dict()


@pytest.mark.parametrize("index", [0, 1, 2, 3])
def test_resume_from_any_step_without_edits_reproduces_the_run(db, index):
    first = run_to_end(start_run(TOY, "q", db, llm=None))
    again = run_to_end(resume_run(TOY, first, index, db, llm=None))
    assert again.status == "done" and again.resumed_from == index
    assert again.parent_run_id == first.run_id
    assert [e.data for e in again.events] == [e.data for e in first.events]
    assert again.final_sql == first.final_sql and again.result["rows"] == [[11]]
    assert not any(e.edited for e in again.events)


@pytest.mark.parametrize("index", [1, 2])
def test_resume_with_edited_data_starts_from_the_edit_and_keeps_earlier_events(db, index):
    first = run_to_end(start_run(TOY, "q", db, llm=None))
    edited = dict(first.events[index - 1].data, n=100)
    again = run_to_end(resume_run(TOY, first, index, db, llm=None, data=edited))
    expected = 100 + (10 if index == 1 else 0)
    assert again.final_sql == f"SELECT {expected} AS n"
    assert [e.step for e in again.events[:index]] == [e.step for e in first.events[:index]]
    assert again.events[index - 1].edited and again.events[index - 1].data["n"] == 100
    assert not first.events[index - 1].edited  # the original run is untouched


def test_resume_from_the_first_step_with_edited_start_data(db):
    first = run_to_end(start_run(TOY, "q", db, llm=None))
    again = run_to_end(resume_run(TOY, first, 0, db, llm=None, data={"trace": ["edited"]}))
    assert again.start_data == {"trace": ["edited"]}
    assert again.events[-1].data["trace"] == ["edited", "a", "b", "c"]


def test_resume_rejects_an_index_out_of_range(db):
    first = run_to_end(start_run(TOY, "q", db, llm=None))
    with pytest.raises(ValueError, match="between 0 and 3"):
        list(resume_run(TOY, first, 4, db, llm=None))


def test_a_failed_step_ends_the_run_with_its_message(db):
    run = run_to_end(start_run(TOY, "q", db, llm=None, params={"mode": "fail"}))
    assert run.status == "failed" and run.error == "Beta: b cannot go on"
    assert [e.status for e in run.events] == ["ok", "error"]
    assert run.events[-1].next_step is None and run.events[-1].data["trace"] == ["a", "b"]


def test_an_unexpected_exception_in_a_step_is_a_failed_step_not_a_crash(db):
    run = run_to_end(start_run(TOY, "q", db, llm=None, params={"mode": "boom"}))
    assert run.status == "failed"
    assert run.events[-1].error.startswith("ZeroDivisionError")
    assert run.finished_at is not None


def test_the_cancel_event_stops_the_run_before_the_next_step(db):
    cancel = threading.Event()
    items = []
    for item in start_run(TOY, "q", db, llm=None, cancel=cancel):
        items.append(item)
        if isinstance(item, StepEvent) and item.step == "a":
            cancel.set()
    run = items[-1].run
    assert run.status == "stopped" and run.error == "stopped by the user"
    assert [e.step for e in run.events] == ["a", "b"]
    assert run.events[-1].error == "stopped by the user"
    assert not any(isinstance(i, StepStarted) and i.step == "c" for i in items)


def test_a_step_graph_that_names_an_unknown_step_fails_cleanly(db):
    class Broken(Pipeline):
        name = "broken"
        steps = [Step("a", "Alpha", lambda ctx: "nowhere")]

    run = run_to_end(start_run(Broken(), "q", db, llm=None))
    assert run.status == "failed" and "nowhere" in run.error


# -- parameters -----------------------------------------------------------------------------------
def test_param_coercion_from_text():
    assert ParamSpec("k", 3).coerce("7") == 7
    assert ParamSpec("t", 0.5).coerce("0.25") == 0.25
    for text, value in (("true", True), ("Yes", True), ("on", True), ("0", False),
                        ("false", False), ("off", False)):
        assert ParamSpec("b", True).coerce(text) is value
    choice = ParamSpec("mode", "a", kind="choice", choices=["a", "b"])
    assert choice.coerce("b") == "b"
    with pytest.raises(ValueError, match="must be one of"):
        choice.coerce("c")
    bounded = ParamSpec("n", 3, min=0, max=5)
    with pytest.raises(ValueError, match="at most 5"):
        bounded.coerce("6")
    with pytest.raises(ValueError, match="at least 0"):
        bounded.coerce(-1)
    with pytest.raises(ValueError):
        ParamSpec("k", 3).coerce("three")


def test_resolve_params_fills_defaults_and_rejects_unknown_names():
    assert TOY.resolve_params({"add": "5"}) == {"add": 5, "mode": "normal"}
    with pytest.raises(ValueError, match="no parameter 'nope'"):
        TOY.resolve_params({"nope": 1})


def test_macsql_and_baseline_document_their_parameters():
    from agents.pipelines import get_pipeline

    for pipeline in (get_pipeline("macsql"), get_pipeline("baseline")):
        for spec in pipeline.params:
            assert spec.help, f"{pipeline.name}.{spec.name} has no help text"
            assert spec.coerce(spec.default) == spec.default


# -- model calls ----------------------------------------------------------------------------------
def _asking(ctx):
    def parse(text):
        if not text.strip().isdigit():
            raise ParseError("answer with a number")
        return int(text)

    ctx.data["sql"] = f"SELECT {ctx.ask([{'role': 'user', 'content': 'pick'}], parse=parse)}"
    return None


class Asking(Pipeline):
    name = "asking"
    steps = [Step("ask", "Asker", _asking)]


def test_ask_feeds_a_parse_error_back_once(db, llm, scripted_llm):
    scripted_llm.push("seven", "7")
    run = run_to_end(start_run(Asking(), "q", db, llm))
    assert run.status == "done" and run.final_sql == "SELECT 7"
    calls = run.events[0].calls
    assert len(calls) == 2 and "answer with a number" in calls[0].error
    assert "answer with a number" in last_user_message(scripted_llm.requests[1])


def test_ask_fails_the_step_after_a_second_bad_answer(db, llm, scripted_llm):
    scripted_llm.push("seven", "eight")
    run = run_to_end(start_run(Asking(), "q", db, llm))
    assert run.status == "failed" and "could not be parsed" in run.events[0].error


def test_an_unreachable_model_is_a_failed_step(db, scripted_llm):
    from agents.core.config import Settings
    from agents.llm.client import make_client

    port = scripted_llm.port
    scripted_llm.close()
    llm = make_client(Settings(provider="openai", base_url=f"http://127.0.0.1:{port}/v1",
                               api_key="k", cache=False, max_retries=0, request_timeout=2.0))
    run = run_to_end(start_run(Asking(), "q", db, llm))
    assert run.status == "failed" and run.events[0].error.startswith("model call failed")
    assert isinstance(run.events[0].calls[0].error, str)


def test_run_finished_is_the_last_item(db):
    items = list(start_run(TOY, "q", db, llm=None))
    assert isinstance(items[-1], RunFinished)
    assert sum(isinstance(i, RunFinished) for i in items) == 1


# -- a closing step ---------------------------------------------------------------------------

def _close(ctx):
    ctx.data["trace"].append("close")
    ctx.data["sql"] = "SELECT 42 AS n"
    ctx.set_output(parsed={"closed": True}, sql=ctx.data["sql"])


class Closing(Toy):
    """The toy pipeline with a closing step the engine goes on to where ``c`` would end."""

    name = "closing"
    params = Toy.params + [ParamSpec("close", "yes", kind="choice",
                                     choices=["yes", "no", "raise"])]
    steps = Toy.steps + [Step("close", "Closer", _close, then=(None,))]
    closing = "close"

    def closes(self, ctx):
        if ctx.params["close"] == "raise":
            raise RuntimeError("cannot decide")
        return ctx.params["close"] == "yes"


def test_the_engine_goes_on_to_the_closing_step_where_the_run_would_end(db):
    pipeline = Closing()
    run = run_to_end(start_run(pipeline, "q", db, llm=None))
    assert [e.step for e in run.events] == ["a", "b", "c", "close"]
    assert run.events[2].next_step == "close" and run.final_sql == "SELECT 42 AS n"
    # resumed from the closing step, or from the step before it, the same run
    for index in (2, 3):
        again = run_to_end(resume_run(pipeline, run, index, db, llm=None))
        assert [e.step for e in again.events] == ["a", "b", "c", "close"]


@pytest.mark.parametrize("params", [{"close": "no"}, {"close": "raise"}])
def test_no_closing_step_when_it_has_nothing_to_do_or_cannot_decide(db, params):
    run = run_to_end(start_run(Closing(), "q", db, llm=None, params=params))
    assert run.status == "done" and [e.step for e in run.events] == ["a", "b", "c"]
    assert run.events[-1].next_step is None


def test_a_failed_or_stopped_run_does_not_close(db):
    failed = run_to_end(start_run(Closing(), "q", db, llm=None, params={"mode": "fail"}))
    assert failed.status == "failed" and [e.step for e in failed.events] == ["a", "b"]
    cancel = threading.Event()
    cancel.set()
    stopped = run_to_end(start_run(Closing(), "q", db, llm=None, cancel=cancel))
    assert stopped.status == "stopped" and "close" not in [e.step for e in stopped.events]
