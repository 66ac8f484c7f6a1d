"""Runs and comparisons drained in a worker thread, so a view can draw what has happened so far.

Why a thread: a Streamlit script run is interrupted whenever the user touches a widget. If the
pipeline ran inside the script, any click would abandon it half-way (and the next rerun would
call the model again). Here the engine's items are collected by a worker thread into a
:class:`Job` kept by the page; every script run just *draws* what the job holds and keeps polling
while it runs, so reruns never call the model again. The Ask page (one run) and the Compare page
(several pipelines in turn) use the same job, so they stop, save and fail alike.

A job stops through the engine (:func:`agents.core.engine.stop_run`): the run keeps its finished
steps and gets its last SQL executed; a model call in flight is not waited for (its connection
is closed, so the model stops writing).

What a running step's model call has written so far (:class:`~agents.core.events.StepPartial`) is
kept apart from the items: only the latest partial of each running step, in ``partials``, so a
long answer written token by token does not pile up thousands of items.
"""

from __future__ import annotations

import threading
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from agents.core.engine import RunControl, stop_run
from agents.core.events import Run, RunFinished, StepEvent, StepPartial

Item = tuple[str, Any]  # (pipeline name, StepStarted | StepEvent | RunFinished)


@dataclass
class Job:
    """A pipeline run or a comparison in progress, or just finished."""

    label: str
    items: list[Item] = field(default_factory=list)
    result: Any = None  # the finished Run, or the ComparisonResult
    failure: str | None = None  # the worker itself crashed (not a failed step)
    save_error: str | None = None
    control: RunControl = field(default_factory=RunControl)
    started_at: float = field(default_factory=time.time)
    thread: threading.Thread | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)
    stopped: bool = False  # finished by a stop; the worker's own end is dropped
    # (pipeline name, step index) -> the latest StepPartial of a step still running
    partials: dict[tuple[str, int], StepPartial] = field(default_factory=dict)

    @property
    def finished(self) -> bool:
        return self.result is not None or self.failure is not None

    def emit(self, source: str, item: Any) -> None:
        with self.lock:
            if self.stopped:
                return
            if isinstance(item, StepPartial):
                self.partials[(source, item.index)] = item
                return
            if isinstance(item, StepEvent):
                self.partials.pop((source, item.index), None)
            self.items.append((source, item))

    def partial(self, source: str, index: int) -> StepPartial | None:
        """The latest partial output of a running step (None before its model writes)."""
        with self.lock:
            return self.partials.get((source, index))


def start_job(label: str, work: Callable[[Job], Any], save: Callable[[Any], None], *,
              control: RunControl | None = None) -> Job:
    """Run ``work(job)`` in a daemon thread; its return value is saved, then becomes
    ``job.result``. ``save`` runs in the worker, so a result is stored even when the user has
    left the page by the time it ends."""
    return _start(Job(label=label, control=control or RunControl()), work, save)


def _start(job: Job, work: Callable[[Job], Any], save: Callable[[Any], None]) -> Job:
    label = job.label

    def worker() -> None:
        try:
            result = work(job)
        except Exception as exc:  # the engine turns step failures into events; this is a bug
            job.failure = f"The {label} crashed: {exc.__class__.__name__}: {exc}"
            traceback.print_exc()
            return
        with job.lock:
            if job.stopped or result is None:
                return
        _save(job, save, result)
        job.result = result

    job.thread = threading.Thread(target=worker, name=f"job-{label}", daemon=True)
    job.thread.start()
    return job


def run_job(name: str, items: Callable[[RunControl], Iterator], save: Callable[[Run], None]
            ) -> Job:
    """A job for one pipeline run: ``items(control)`` is a ``start_run``/``resume_run`` call
    given the job's control. It is called here, so the run exists (``job.control.run``, with the
    steps a resumed run keeps) before the job is returned."""
    control = RunControl()
    job = Job(label="run", control=control)
    control.on_partial = lambda item: job.emit(name, item)
    stream = items(control)

    def work(job: Job) -> Run | None:
        run = None
        for item in stream:
            job.emit(name, item)
            if isinstance(item, RunFinished):
                run = item.run
        return run

    return _start(job, work, save)


def stop_job(job: Job, save: Callable[[Any], None], grace: float = 0.5) -> Any:
    """Stop now. A single run is finished by the engine as ``stopped`` and saved; a comparison
    stops its current pipeline and skips the rest (its worker saves what it has)."""
    if job.finished:
        return job.result
    if job.label != "run":
        job.control.cancel.set()
        return None
    run = stop_run(job.control, grace)
    with job.lock:
        if job.result is not None or job.stopped:
            return job.result
        job.stopped = True
    if run is not None:
        _save(job, save, run)
    else:
        job.failure = "The run was stopped before its first step."
    job.result = run
    return run


def _save(job: Job, save: Callable[[Any], None], result: Any) -> None:
    try:
        save(result)
    except Exception as exc:
        job.save_error = f"The {job.label} finished but could not be saved to the store: {exc}"
