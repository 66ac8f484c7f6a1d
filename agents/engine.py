"""The step engine every pipeline runs on.

A pipeline is a declared graph of named steps (:class:`Step`, each listing the steps that may
follow it), each a function ``fn(ctx) -> next step name or None``. A step reads and writes only ``ctx.data`` (a JSON-serializable dict) plus the fixed run
inputs (question, evidence, params, database). After each step the engine snapshots ``ctx.data``
into the step's :class:`~agents.events.StepEvent`, so a run can be resumed from any step, with the
state edited or not, and the result is the same as if the pipeline had got there by itself.

What a step sees and may call is :class:`~agents.step_context.StepContext`.
"""

from __future__ import annotations

import copy
import dataclasses
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from .events import STOPPED, Run, RunFinished, StepEvent, StepPartial, StepStarted
from .step_context import (ExecLimits, ParseError, RunStopped, StepContext, StepError,  # noqa: F401
                           UnparseableAnswer, _jsonable)

MAX_STEPS = 200  # a guard against a pipeline whose step graph loops forever


@dataclass
class ParamSpec:
    """One user-settable pipeline parameter (shown in the CLI, the app and the harness)."""

    name: str
    default: Any
    help: str = ""
    kind: str = ""  # int | float | bool | str | choice; inferred from default when empty
    choices: list | None = None
    min: float | None = None
    max: float | None = None

    def coerce(self, value: Any) -> Any:
        kind = self.kind or type(self.default).__name__
        if kind == "bool":
            if isinstance(value, str):
                return value.strip().lower() in ("1", "true", "yes", "on")
            return bool(value)
        if kind == "int":
            value = int(value)
        elif kind == "float":
            value = float(value)
        elif kind in ("str", "choice"):
            value = str(value)
        if self.choices is not None and value not in self.choices:
            raise ValueError(f"{self.name} must be one of {self.choices}, not {value!r}")
        if self.min is not None and value < self.min:
            raise ValueError(f"{self.name} must be at least {self.min}")
        if self.max is not None and value > self.max:
            raise ValueError(f"{self.name} must be at most {self.max}")
        return value


END = None  # in ``Step.then``: the run may end after this step


@dataclass
class Step:
    """One node of a pipeline's declared step graph.

    ``then`` lists the steps that may follow (``END``: the run may end here); the engine refuses
    a transition the pipeline did not declare, so the graph drawn in the trace and the docs is
    the graph that runs. A step with ``takes_arg`` is instantiated per argument, named
    ``<name>:<arg>`` (CSMA's ``extract:2`` is agent 2's extraction): its ``fn`` receives the
    argument as ``fn(ctx, arg)`` and ``{arg}`` in its agent name is filled in.
    """

    name: str
    agent: str
    fn: Callable[..., str | None]
    title: str = ""
    then: tuple[str | None, ...] = ()
    takes_arg: bool = False

    def bind(self, arg: str) -> "Step":
        """This step for one argument (a concrete node such as ``extract:2``)."""
        fn = self.fn
        return dataclasses.replace(self, name=f"{self.name}:{arg}",
                                   agent=self.agent.format(arg=arg),
                                   fn=lambda ctx: fn(ctx, arg), takes_arg=False)

    def allows(self, next_step: str | None) -> bool:
        """Whether the declared graph has an edge from this step to ``next_step`` (a step that
        declares nothing, as in a quick test pipeline, allows any)."""
        if not self.then:
            return True
        base = None if next_step is None else next_step.partition(":")[0]
        return base in self.then


class Pipeline:
    """Base class: subclasses set ``name``, ``title``, ``params`` and ``steps``."""

    name: str = ""
    title: str = ""
    description: str = ""
    paper: str = ""
    params: list[ParamSpec] = []
    steps: list[Step] = []
    # Parameters whose default changed, each with its default before: a run or an evaluation
    # recorded without the parameter ran with that value, not today's (``resolve_recorded``).
    earlier_defaults: dict[str, Any] = {}
    # A step (one of ``steps``) the engine goes on to where any other step would end the run,
    # when ``closes`` says it has something to do: a check of the final SQL shared by several
    # pipelines, drawn after every step that may end (:meth:`edges`) without each step having
    # to know of it.
    closing: str | None = None

    def closes(self, ctx: "StepContext") -> bool:
        """Whether the run goes on to :attr:`closing` instead of ending here."""
        return False

    def first_step(self, ctx: "StepContext") -> str:
        return self.steps[0].name

    def initial_data(self, ctx: "StepContext") -> dict:
        """The working state before the first step."""
        return {}

    def step(self, name: str) -> Step:
        """The step named ``name``; ``base:arg`` names a step that takes an argument."""
        base, _, arg = name.partition(":")
        for s in self.steps:
            if s.name == base and bool(arg) == s.takes_arg:
                return s.bind(arg) if arg else s
        raise KeyError(f"pipeline {self.name!r} has no step {name!r}")

    def edges(self) -> list[tuple[str, str | None]]:
        """The declared step graph as ``(step, next step or END)`` pairs, in step order; a
        step that may end the run may go on to the :attr:`closing` step instead."""
        pairs = []
        for s in self.steps:
            for t in s.then:
                pairs.append((s.name, t))
                if t is END and self.closing and s.name != self.closing:
                    pairs.append((s.name, self.closing))
        return pairs

    def resolve_params(self, overrides: dict | None) -> dict:
        values = {p.name: p.default for p in self.params}
        for key, value in (overrides or {}).items():
            spec = next((p for p in self.params if p.name == key), None)
            if spec is None:
                raise ValueError(f"pipeline {self.name!r} has no parameter {key!r}")
            values[key] = spec.coerce(value)
        return values

    def resolve_recorded(self, recorded: dict | None) -> dict:
        """The parameters a recorded run or evaluation ran with: those it names, one it does
        not name at its default of the time if that default has changed since, the rest at
        today's defaults. Resuming an old run must not change what its earlier steps meant."""
        return self.resolve_params({**self.earlier_defaults, **(recorded or {})})

    def final_sql(self, data: dict) -> str | None:
        return data.get("sql")


Item = StepStarted | StepEvent | RunFinished


class RunControl:
    """The handle on one run in progress: another thread stops it with :func:`stop_run`.

    The engine fills it in as the run goes (``run`` holds the steps finished so far) and sets
    ``finished`` with the finished run in ``result``. ``cancel`` is checked before every step
    and model call, and ends a model call in flight.

    ``on_partial`` hears a :class:`~agents.events.StepPartial` whenever the running step's
    model call writes (or waits for its turn at the model). These are not items of the run's
    iterator, because a step is one call of that iterator: they arrive *during* it, on the
    thread that drives the run. Nothing stores them; the step's StepEvent is the record.
    """

    def __init__(self, cancel: threading.Event | None = None,
                 on_partial: Callable[[StepPartial], None] | None = None):
        self.cancel = cancel or threading.Event()
        self.on_partial = on_partial
        self.finished = threading.Event()
        self.lock = threading.Lock()  # the driving thread vs. a stop
        self.run: Run | None = None
        self.result: Run | None = None
        self.detached = False  # stopped from outside: whatever the driver does next is dropped
        self._pipeline: Pipeline | None = None
        self._ctx: StepContext | None = None

    def partial(self, item: StepPartial) -> None:
        """Pass a running step's partial output on (dropped once the run was stopped)."""
        listener = self.on_partial
        if listener is not None and not self.detached:
            listener(item)

    def _attach(self, pipeline: Pipeline, ctx: StepContext) -> None:
        self._pipeline, self._ctx, self.run = pipeline, ctx, ctx.run


def stop_run(control: RunControl, grace: float = 0.5) -> Run | None:
    """Stop a run now and return it as finished.

    A step between model calls stops within ``grace`` seconds and the engine finishes the run
    itself. A model call still in flight is not waited for: the run is finished from the steps
    completed so far -- status ``stopped``, its last SQL executed -- and what the call returns
    later is dropped. None when the run had not started yet.
    """
    control.cancel.set()
    if control.finished.wait(grace):
        return control.result
    with control.lock:
        if control.result is not None:
            return control.result
        control.detached = True
        if control.run is None:
            return None
        stopped = Run.from_dict(_jsonable(control.run.to_dict()))
    ctx = control._ctx
    data = stopped.state_before(len(stopped.events))
    _conclude(stopped, control._pipeline, data, ctx.db, ctx.limits, stopped=True)
    control.result = stopped
    control.finished.set()
    return stopped


def start_run(pipeline: Pipeline, question: str, db, llm, *, evidence: str = "",
              params: dict | None = None, limits: ExecLimits | None = None,
              cancel: threading.Event | None = None, services: dict | None = None,
              control: RunControl | None = None, context: dict | None = None,
              on_partial: Callable[[StepPartial], None] | None = None) -> Iterator[Item]:
    """Run ``pipeline`` on ``question``; yields StepStarted/StepEvent items, then RunFinished.

    ``control`` (or just a ``cancel`` event) lets another thread stop the run. The run is set
    up at once (``control.run`` exists when this returns); its steps run as the items are
    drawn. ``on_partial`` hears the running step's model output as it is written (see
    :class:`RunControl`). ``context`` is recorded on the run as what its ``evidence`` was made
    of (see :mod:`agents.run_context`); the steps read only the evidence."""
    control = _control(control, cancel, on_partial)
    run = Run(pipeline=pipeline.name, question=question, evidence=evidence or "",
              db_name=db.name, db_path=getattr(db, "path", None),
              params=pipeline.resolve_params(params), model=getattr(llm, "model", "") or "",
              context=copy.deepcopy(context or {}))
    ctx = StepContext(pipeline=pipeline, run=run, db=db, llm=llm, limits=limits or ExecLimits(),
                      data={}, cancel=control.cancel, services=services,
                      on_partial=control.partial)
    control._attach(pipeline, ctx)
    try:
        ctx.data = pipeline.initial_data(ctx)
        first = pipeline.first_step(ctx)
    except Exception as exc:  # bad initial state is a failed run, not a crash
        run.start_data = {}
        return _finish(control, error=f"could not start: {exc}")
    run.start_data = copy.deepcopy(_jsonable(ctx.data))
    return _drive(control, first)


def resume_run(pipeline: Pipeline, previous: Run, from_index: int, db, llm, *,
               data: dict | None = None, limits: ExecLimits | None = None,
               cancel: threading.Event | None = None, services: dict | None = None,
               params: dict | None = None, control: RunControl | None = None,
               on_partial: Callable[[StepPartial], None] | None = None) -> Iterator[Item]:
    """Re-run ``previous`` from its step ``from_index`` on, as a new run.

    Events before ``from_index`` are kept. The step at ``from_index`` starts from ``data`` when
    given (an edited state) or else from the state the original run had before that step. With
    ``from_index == len(previous.events)`` the run continues after its last step (if it had one).
    """
    control = _control(control, cancel, on_partial)
    if not 0 <= from_index <= len(previous.events):
        raise ValueError(f"from_index must be between 0 and {len(previous.events)}")
    kept = [copy.deepcopy(e) for e in previous.events[:from_index]]
    if from_index < len(previous.events):
        step_name = previous.events[from_index].step
    else:
        step_name = previous.events[-1].next_step if previous.events else None
    start = copy.deepcopy(data if data is not None else previous.state_before(from_index))
    if data is not None and kept:
        kept[-1].data = copy.deepcopy(data)
        kept[-1].edited = True
    run = Run(pipeline=previous.pipeline, question=previous.question, evidence=previous.evidence,
              db_name=previous.db_name, db_path=previous.db_path,
              params=pipeline.resolve_recorded(params if params is not None
                                               else previous.params),
              model=getattr(llm, "model", "") or previous.model,
              start_data=copy.deepcopy(previous.start_data), events=kept,
              parent_run_id=previous.run_id, resumed_from=from_index,
              context=copy.deepcopy(previous.context))
    if data is not None and not kept:
        run.start_data = copy.deepcopy(data)
    ctx = StepContext(pipeline=pipeline, run=run, db=db, llm=llm, limits=limits or ExecLimits(),
                      data=start, cancel=control.cancel, services=services,
                      on_partial=control.partial)
    control._attach(pipeline, ctx)
    return _drive(control, step_name)


def _control(control: RunControl | None, cancel, on_partial) -> RunControl:
    control = control or RunControl(cancel)
    if on_partial is not None:
        control.on_partial = on_partial
    return control


def _drive(control: RunControl, step_name: str | None) -> Iterator[Item]:
    pipeline, ctx = control._pipeline, control._ctx
    run = ctx.run
    error = None
    stopped = False
    while step_name is not None:
        if len(run.events) >= MAX_STEPS:
            error = f"stopped after {MAX_STEPS} steps (the pipeline did not finish)"
            break
        try:
            step = pipeline.step(step_name)
        except KeyError as exc:
            error = str(exc)
            break
        index = len(run.events)
        yield StepStarted(index=index, step=step.name, agent=step.agent, title=step.title)
        event = StepEvent(index=index, step=step.name, agent=step.agent, title=step.title,
                          started_at=time.time())
        ctx.event = event
        t0 = time.perf_counter()
        next_step = None
        try:
            if ctx.cancel is not None and ctx.cancel.is_set():
                raise RunStopped()
            next_step = step.fn(ctx)
        except RunStopped:
            event.status = "error"
            event.error = STOPPED
            stopped = True
        except StepError as exc:
            event.status = "error"
            event.error = str(exc)
        except Exception as exc:  # a bug in a step must not take the app down
            event.status = "error"
            event.error = f"{exc.__class__.__name__}: {exc}"
        if event.status != "error" and not step.allows(next_step):
            event.status = "error"
            event.error = (f"went on to {next_step or 'the end'}, which the {pipeline.name} "
                           f"step graph does not allow after {step.name}")
        event.seconds = time.perf_counter() - t0
        if event.status != "error" and next_step is None and len(run.events) + 1 < MAX_STEPS:
            next_step = _closing(pipeline, ctx, step.name)  # decided after the step's time
        event.next_step = next_step if event.status != "error" else None
        event.data = copy.deepcopy(_jsonable(ctx.data))
        with control.lock:
            if control.detached:  # stopped from outside while this step ran
                return None
            run.events.append(event)
        yield event
        if stopped:
            break
        if event.status == "error":
            error = f"{step.agent}: {event.error}"
            break
        step_name = next_step
    return (yield from _finish(control, error=error, stopped=stopped))


def _closing(pipeline: Pipeline, ctx: StepContext, ending: str) -> str | None:
    """The pipeline's closing step, where the run would end after ``ending`` and the closing
    step has something to do; a failing check is the run's end, not its failure."""
    if not pipeline.closing or ending.partition(":")[0] == pipeline.closing:
        return None
    try:
        return pipeline.closing if pipeline.closes(ctx) else None
    except Exception:  # noqa: BLE001 -- a check that cannot decide leaves the run as it is
        return None


def _finish(control: RunControl, *, error: str | None = None,
            stopped: bool = False) -> Iterator[Item]:
    ctx = control._ctx
    run = ctx.run
    _conclude(run, control._pipeline, ctx.data, ctx.db, ctx.limits, error=error, stopped=stopped)
    with control.lock:
        if control.detached:
            return None
        control.result = run
    control.finished.set()
    yield RunFinished(run=run)
    return run


def _conclude(run: Run, pipeline: Pipeline, data: dict | None, db, limits: ExecLimits, *,
              error: str | None = None, stopped: bool = False) -> None:
    """Give ``run`` its outcome: the final SQL of its last state, executed; status and end."""
    try:
        run.final_sql = pipeline.final_sql(data) if data else None
    except Exception:  # an edited state without the pipeline's keys
        run.final_sql = None
    if run.final_sql:
        try:
            result = db.execute(run.final_sql, timeout=limits.timeout, max_rows=limits.max_rows)
            run.result = result.preview(rows=limits.max_rows)
        except Exception as exc:
            run.result = {"ok": False, "error": str(exc), "error_class": exc.__class__.__name__}
    run.status = "stopped" if stopped else ("failed" if error else "done")
    run.error = STOPPED if stopped else error
    run.finished_at = time.time()


def run_to_end(items: Iterator[Item]) -> Run:
    """Drain a run's items and return the finished :class:`Run` (for scripts and tests)."""
    run = None
    for item in items:
        if isinstance(item, RunFinished):
            run = item.run
    assert run is not None
    return run


