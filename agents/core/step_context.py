"""What a step function sees and records: the run's inputs, its working state, the model and
the database (:class:`StepContext`), and the errors a step may raise.

Model calls go through :meth:`StepContext.ask`, which records the prompt, raw output, tokens and
seconds, retries a malformed answer once with the parse error, and turns a second failure into a
failed step (never a crash). SQL runs through :meth:`StepContext.execute`, which only runs
read-only SQL under the run's time limit and row cap.
"""

from __future__ import annotations

import copy
import json
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

from agents.rules.registry import evidence_for_agents, hint_at_execution
from agents.core.events import LLMCall, Run, StepEvent, StepPartial
from agents.outputs import Generic, Output
from agents.llm.token_budget import over_context

RETRIEVED_SCHEMA = "retrieved_schema"  # the state key the Schema Retriever leaves its selection in
RETRIEVED_FIRST = "retrieved_first"    # ... and the tables its prompts write first, if any


class StepError(Exception):
    """A step could not do its job; the run stops with this message shown to the user."""


class ParseError(ValueError):
    """A model answer did not have the required form; the message is fed back to the model."""


class UnparseableAnswer(StepError):
    """The model's answer had the wrong form twice (after the retry); a step whose output is
    optional, such as the MAC-SQL Selector, catches this and carries on without it."""


class RunStopped(Exception):
    """The user asked the run to stop."""


@dataclass
class ExecLimits:
    timeout: float = 10.0
    max_rows: int = 1000
    hints: bool = True  # add agents.rules.error_hints' hint to a failing query's name error


class StepContext:
    """What a step function sees: run inputs, working state, the model and the database."""

    def __init__(self, *, pipeline, run: Run, db, llm, limits: ExecLimits,
                 data: dict, cancel: threading.Event | None = None, services: dict | None = None,
                 on_partial: Callable[[StepPartial], None] | None = None):
        self.pipeline = pipeline
        self.run = run
        self.db = db
        self.llm = llm
        self.limits = limits
        self.data = data
        self.cancel = cancel
        self.services = services or {}
        self.event: StepEvent | None = None
        self._retrieved: tuple[str, Any] | None = None
        self._evidence: tuple[tuple, str, str | None] | None = None
        self.on_partial = on_partial

    # -- fixed inputs -------------------------------------------------------------------------
    @property
    def question(self) -> str:
        return self.run.question

    @property
    def evidence(self) -> str:
        """The evidence the agents read: the run's, with what the pipeline's schema-context
        rules add for the schema they see (the units note); the run's own is ``run.evidence``,
        which is what retrieval ranks tables by."""
        schema = self.schema
        key = (id(schema), self.run.evidence)  # the params are fixed for the run
        if self._evidence is None or self._evidence[0] != key:
            text, added = evidence_for_agents(getattr(self.pipeline, "rules", ()),
                                              self.params, self.run.evidence, schema)
            note = ("Schema context: the evidence the agents read has the notes of " +
                    ", ".join(f"{r.title} ({r.name})" for r in added)) if added else None
            self._evidence = (key, text, note)
        _, text, note = self._evidence
        if note and self.event is not None and note not in self.event.notes:
            self.note(note)
        return text

    @property
    def params(self) -> dict:
        return self.run.params

    @property
    def schema(self):
        """The schema the agents work on: the database's, or the part the Schema Retriever
        kept for this question when the whole is too long for the prompts
        (:mod:`agents.retrieval`), with the tables it writes first, if any, first."""
        kept = self.data.get(RETRIEVED_SCHEMA) if isinstance(self.data, dict) else None
        if not kept:
            return self.db.schema
        first = self.data.get(RETRIEVED_FIRST) or []
        key = json.dumps([kept, first], sort_keys=True, default=str)
        if self._retrieved is None or self._retrieved[0] != key:
            self._retrieved = (key, self.db.schema.subset(kept).with_first(first))
        return self._retrieved[1]

    # -- recording ----------------------------------------------------------------------------
    def set_inputs(self, **inputs: Any) -> None:
        self.event.inputs.update(_jsonable(inputs))

    def set_output(self, output: Output | None = None, sql: str | None = None, *,
                   parsed: Any = None) -> None:
        """Record what the step produced: a typed record of one output kind (its views, the
        CLI's and the editor's, dispatch on that kind) and the SQL it leaves, if any.
        ``parsed=`` takes a plain JSON value instead, shown by the generic views."""
        output = output if output is not None else parsed
        if output is not None:
            if not isinstance(output, Output):  # a plain dict: shown by the generic view
                output = Generic(data=output)
            self.event.kind = output.kind
            self.event.parsed = _jsonable(output.to_dict())
        if sql is not None:
            self.event.sql = sql

    def set_agent(self, agent: str) -> None:
        """Name the agent of this step more precisely once it is known (e.g. a reviewer's
        persona, chosen by an earlier step)."""
        self.event.agent = agent

    def note(self, text: str) -> None:
        self.event.notes.append(text)

    def skip(self, reason: str) -> None:
        """Mark this step as skipped (it ran no model call and changed nothing)."""
        self.event.status = "skipped"
        self.note(reason)

    # -- model --------------------------------------------------------------------------------
    def ask(self, messages: list[dict], parse: Callable[[str], Any] | None = None, *,
            json_schema: dict | None = None, temperature: float | None = None,
            max_tokens: int | None = None, stop: list[str] | None = None,
            retry_parse: bool = True, seed: int | None = None) -> Any:
        """Send ``messages`` to the model and return ``parse(text)`` (or the text).

        A :class:`ParseError` (or ``ValueError``) from ``parse`` is fed back to the model once,
        with the error, and the answer is parsed again; a second failure fails the step.
        Transport errors from the client (already retried there) fail the step too, and so
        does a prompt too long for the model's context, before it is sent
        (:mod:`agents.llm.token_budget`). ``seed`` tells apart several samples of one prompt
        at a temperature above 0 (the client adds the settings' seed).
        """
        self._check_cancel()
        msgs = list(messages)
        attempts = 2 if (parse is not None and retry_parse) else 1
        last_error = ""
        for attempt in range(attempts):
            call = LLMCall(messages=copy.deepcopy(msgs))
            self.event.calls.append(call)
            too_long = over_context(msgs, self.llm, max_tokens)
            if too_long:
                call.error = too_long
                raise StepError(too_long)
            # Wall time around the whole call, so retries and back-off waits count as model
            # time rather than silently inflating the time "outside the model".
            t0 = time.perf_counter()
            try:
                reply = self.llm.chat(msgs, json_schema=json_schema, temperature=temperature,
                                      max_tokens=max_tokens, stop=stop, cancel=self.cancel,
                                      **({"seed": seed} if seed is not None else {}),
                                      **self._listeners(len(self.event.calls)))
            except Exception as exc:  # the client raises LLMError with a user-facing message
                call.seconds = time.perf_counter() - t0
                call.error = str(exc) or exc.__class__.__name__
                self._check_cancel()  # a call ended by the stop button stops the run
                raise StepError(f"model call failed: {call.error}") from exc
            call.raw = reply.text
            call.model = reply.model
            call.prompt_tokens = reply.prompt_tokens
            call.completion_tokens = reply.completion_tokens
            call.seconds = time.perf_counter() - t0
            call.cached = reply.cached
            if parse is None:
                return reply.text
            try:
                return parse(reply.text)
            except (ParseError, ValueError) as exc:
                last_error = str(exc) or exc.__class__.__name__
                call.error = f"unparseable answer: {last_error}"
                msgs = msgs + [
                    {"role": "assistant", "content": reply.text},
                    {"role": "user", "content": (
                        f"Your answer could not be used: {last_error}. "
                        "Answer again, exactly in the required format.")},
                ]
        raise UnparseableAnswer(
            f"the model's answer could not be parsed after a retry: {last_error}")

    def _listeners(self, call: int) -> dict:
        """``on_text``/``on_wait`` for the client, turning what it hears into
        :class:`StepPartial` items for ``on_partial`` (none when nobody listens)."""
        if self.on_partial is None:
            return {}
        event, emit = self.event, self.on_partial
        parts: list[str] = []

        def on_text(piece: str) -> None:
            parts.append(piece)
            emit(StepPartial(index=event.index, step=event.step, call=call,
                             text="".join(parts), delta=piece))

        def on_wait(ahead: int) -> None:
            emit(StepPartial(index=event.index, step=event.step, call=call,
                             text="".join(parts), waiting=ahead or None))

        return {"on_text": on_text, "on_wait": on_wait}

    # -- database -----------------------------------------------------------------------------
    def execute(self, sql: str, *, record: bool = True):
        """Run ``sql`` read-only under the run's limits; never raises for a bad query."""
        self._check_cancel()
        result = self.db.execute(sql, timeout=self.limits.timeout, max_rows=self.limits.max_rows)
        if not result.ok and self.limits.hints:
            # the execution-hint rules this pipeline lists (agents.rules.registry)
            result.hint = hint_at_execution(getattr(self.pipeline, "rules", ()), self.params,
                                            self.db, result.error, sql, self.schema,
                                            timeout=self.limits.timeout)
        if record:
            self.event.execution = result.preview()
        return result

    def _check_cancel(self) -> None:
        if self.cancel is not None and self.cancel.is_set():
            raise RunStopped()


def _jsonable(value: Any) -> Any:
    """Return ``value`` as plain JSON data (tuples become lists, unknown objects strings)."""
    return json.loads(json.dumps(value, default=_default))


def _default(obj: Any) -> Any:
    if hasattr(obj, "to_dict"):
        return obj.to_dict()
    if isinstance(obj, (set, frozenset)):
        return sorted(obj, key=str)
    if isinstance(obj, bytes):
        return f"<{len(obj)} bytes>"
    return str(obj)
