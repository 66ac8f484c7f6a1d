"""The typed records a pipeline run produces.

Every view of a run -- the Streamlit pages, the CLI and the evaluation harness -- reads these
records and nothing else, so the three views can never disagree about what an agent did.
Everything here is plain data: ``to_dict()`` gives JSON-ready dicts and ``from_dict()`` rebuilds
the object, which is how runs are stored, replayed and resumed.
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from agents.outputs.base import Output, infer_kind, load

STOPPED = "stopped by the user"  # the error of the step a stop cut short, and of its run


@dataclass
class LLMCall:
    """One request to the model inside a step (a step may retry, so it may hold several)."""

    messages: list[dict]
    raw: str = ""
    model: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    cached: bool = False
    error: str | None = None

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "LLMCall":
        return cls(**{k: d.get(k) for k in _field_names(cls) if k in d})


@dataclass
class StepStarted:
    """Announces that a step is about to run, so a view can show it as 'running' at once.

    It is not stored: the matching :class:`StepEvent` replaces it when the step ends.
    """

    index: int
    step: str
    agent: str
    title: str = ""


@dataclass
class StepPartial:
    """What the running step's model call has written so far, while it writes.

    Like :class:`StepStarted` it is not stored: views show it until the step's
    :class:`StepEvent` arrives, whose calls hold the final raw text. ``call`` numbers the
    step's model calls from 1 (a retry after an unusable answer starts a new text); ``waiting``
    is how many requests are ahead of this one in the model queue (None: not waiting).
    """

    index: int
    step: str
    call: int
    text: str = ""
    delta: str = ""
    waiting: int | None = None


@dataclass
class StepEvent:
    """What one agent step did: the one record every view renders.

    ``data`` is the complete pipeline working state *after* this step and ``next_step`` the step
    that runs next; together they are what makes a run resumable from any point.
    """

    index: int
    step: str
    agent: str
    title: str = ""
    status: str = "ok"  # ok | error | skipped
    inputs: dict = field(default_factory=dict)
    kind: str = ""  # the kind of ``parsed`` (agents.outputs); "" for runs stored before kinds
    parsed: Any = None
    sql: str | None = None
    execution: dict | None = None  # ExecResult.preview()
    calls: list[LLMCall] = field(default_factory=list)
    error: str | None = None
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    next_step: str | None = None
    data: dict = field(default_factory=dict)
    edited: bool = False
    started_at: float = 0.0

    @property
    def stopped(self) -> bool:
        """Whether a stop cut this step short (its error says so; the step did not fail)."""
        return self.status == "error" and self.error == STOPPED

    @property
    def output_kind(self) -> str:
        """The kind of this step's output; read from the agent's name for older runs."""
        return self.kind or infer_kind(self.agent, self.parsed)

    @property
    def output(self) -> Output:
        """This step's output as its typed record (Generic when it has no kind of its own)."""
        return load(self.output_kind, self.parsed)

    @property
    def prompt_tokens(self) -> int:
        return sum(c.prompt_tokens or 0 for c in self.calls)

    @property
    def completion_tokens(self) -> int:
        return sum(c.completion_tokens or 0 for c in self.calls)

    @property
    def llm_seconds(self) -> float:
        return sum(c.seconds or 0.0 for c in self.calls)

    @property
    def cached_calls(self) -> int:
        """How many of this step's model calls were answered from the response cache (their
        seconds are the cache lookup, not model time)."""
        return sum(1 for c in self.calls if c.cached)

    def cache_label(self) -> str:
        """``cached``, ``1 of 2 calls cached`` or empty: what a step's timing must say."""
        cached = self.cached_calls
        if not cached:
            return ""
        total = len(self.calls)
        return "cached" if cached == total else f"{cached} of {total} calls cached"

    @property
    def prompt(self) -> list[dict]:
        """Messages of the last model call of this step (empty when the step used no model)."""
        return self.calls[-1].messages if self.calls else []

    @property
    def raw_output(self) -> str:
        return self.calls[-1].raw if self.calls else ""

    def to_dict(self) -> dict:
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        d["calls"] = [c.to_dict() for c in self.calls]
        d["prompt_tokens"] = self.prompt_tokens
        d["completion_tokens"] = self.completion_tokens
        d["llm_seconds"] = self.llm_seconds
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "StepEvent":
        kw = {k: d[k] for k in _field_names(cls) if k in d}
        kw["calls"] = [LLMCall.from_dict(c) for c in d.get("calls", [])]
        return cls(**kw)


@dataclass
class Run:
    """A whole pipeline run over one question: its inputs, every step event and the outcome."""

    pipeline: str
    question: str
    db_name: str
    evidence: str = ""
    params: dict = field(default_factory=dict)
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    db_path: str | None = None
    model: str = ""
    start_data: dict = field(default_factory=dict)
    events: list[StepEvent] = field(default_factory=list)
    status: str = "running"  # running | done | failed | stopped
    error: str | None = None
    final_sql: str | None = None
    result: dict | None = None  # ExecResult.preview() of the final SQL
    started_at: float = field(default_factory=time.time)
    finished_at: float | None = None
    parent_run_id: str | None = None
    resumed_from: int | None = None
    # what the run was told besides its question (knowledge notes, the previous question of a
    # conversation): ``agents.runs.run_context.RunContext.to_dict()``; already part of ``evidence``
    context: dict = field(default_factory=dict)
    # what the studio says about the answer (``agents.answer.review.review_answer``): whether
    # the database can answer the question, doubts about the result's shape, why it is empty,
    # the values behind its rows; empty for a run recorded before it existed
    review: dict = field(default_factory=dict)

    @property
    def prompt_tokens(self) -> int:
        return sum(e.prompt_tokens for e in self.events)

    @property
    def completion_tokens(self) -> int:
        return sum(e.completion_tokens for e in self.events)

    @property
    def llm_calls(self) -> int:
        return sum(len(e.calls) for e in self.events)

    @property
    def llm_seconds(self) -> float:
        return sum(e.llm_seconds for e in self.events)

    @property
    def seconds(self) -> float:
        if self.finished_at is None:
            return time.time() - self.started_at
        return self.finished_at - self.started_at

    def state_before(self, index: int) -> dict:
        """The pipeline state a step at ``index`` starts from: the state after the event
        before it, or the run's start state for the first step (not a copy)."""
        return self.events[index - 1].data if index > 0 else self.start_data

    def totals(self) -> dict:
        return {
            "llm_calls": self.llm_calls,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "llm_seconds": round(self.llm_seconds, 3),
            "seconds": round(self.seconds, 3),
            "steps": len(self.events),
        }

    def to_dict(self) -> dict:
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        d["events"] = [e.to_dict() for e in self.events]
        d["totals"] = self.totals()
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Run":
        kw = {k: d[k] for k in _field_names(cls) if k in d}
        kw["events"] = [StepEvent.from_dict(e) for e in d.get("events", [])]
        return cls(**kw)


@dataclass
class RunFinished:
    """The last item a run yields; carries the complete :class:`Run`."""

    run: Run


def _field_names(cls) -> list[str]:
    return [f.name for f in dataclasses.fields(cls)]
