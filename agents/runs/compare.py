"""Run several pipelines on the same question and say whose results agree.

Two pipelines agree when their final queries return the same rows as multisets -- row order
does not matter and neither does the order of the columns (``SELECT name, price`` and
``SELECT price, name`` agree) -- which is how execution accuracy judges a query, too. Column
names are ignored: aliases are a matter of taste, values are not.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from agents.core.engine import ExecLimits, Pipeline, run_to_end, start_run
from agents.core.events import Run
from agents.pipelines import get_pipeline
from agents.db.sqltext import results_equal



@dataclass
class PipelineOutcome:
    """One pipeline's answer to the shared question."""

    pipeline: str
    status: str  # done | failed | stopped | error
    error: str | None = None
    final_sql: str | None = None
    result: dict | None = None  # ExecResult.preview() of the final SQL
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    group: int | None = None  # index into ComparisonResult.groups; None: no usable result
    run: Run | None = None

    @property
    def result_ok(self) -> bool:
        return bool(self.result and self.result.get("ok"))

    def to_dict(self) -> dict:
        return {
            "pipeline": self.pipeline, "status": self.status, "error": self.error,
            "final_sql": self.final_sql, "result": self.result, "calls": self.calls,
            "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
            "seconds": round(self.seconds, 3), "group": self.group,
            "run": self.run.to_dict() if self.run else None,
        }


@dataclass
class ComparisonResult:
    question: str
    db_name: str
    evidence: str = ""
    outcomes: list[PipelineOutcome] = field(default_factory=list)
    groups: list[list[str]] = field(default_factory=list)  # pipelines with equal results

    @property
    def all_agree(self) -> bool:
        """Every pipeline produced a result and all results are equal."""
        return (len(self.groups) == 1 and bool(self.outcomes)
                and len(self.groups[0]) == len(self.outcomes))

    def outcome(self, pipeline: str) -> PipelineOutcome:
        return next(o for o in self.outcomes if o.pipeline == pipeline)

    def to_dict(self) -> dict:
        return {"question": self.question, "db_name": self.db_name, "evidence": self.evidence,
                "all_agree": self.all_agree, "groups": self.groups,
                "outcomes": [o.to_dict() for o in self.outcomes]}


def compare(pipelines: Iterable[str | Pipeline], question: str, db, llm, evidence: str = "",
            params_by_pipeline: dict[str, dict] | None = None,
            on_item: Callable[[str, Any], None] | None = None, *,
            limits: ExecLimits | None = None, services: dict | None = None,
            cancel=None, context: dict | None = None) -> ComparisonResult:
    """Run each pipeline in turn (the model serves one request at a time anyway).

    ``on_item(pipeline_name, item)`` receives every StepStarted/StepEvent/RunFinished as it
    happens, and the running step's StepPartial items as its model writes. A pipeline that
    fails, even with an unexpected exception, becomes an outcome with
    its error; it never stops the others. ``context`` is what ``evidence`` was made of (knowledge
    notes, a follow-up; see :mod:`agents.runs.run_context`), recorded on every pipeline's run.
    """
    comparison = ComparisonResult(question=question, db_name=db.name, evidence=evidence or "")
    params_by_pipeline = params_by_pipeline or {}
    for entry in pipelines:
        pipeline = get_pipeline(entry) if isinstance(entry, str) else entry
        outcome = PipelineOutcome(pipeline=pipeline.name, status="error")
        try:
            items = start_run(pipeline, question, db, llm, evidence=evidence,
                              params=params_by_pipeline.get(pipeline.name), limits=limits,
                              services=services, cancel=cancel, context=context,
                              on_partial=(None if on_item is None else
                                          lambda item, name=pipeline.name: on_item(name, item)))
            if on_item is not None:
                items = _tap(items, pipeline.name, on_item)
            run = run_to_end(items)
        except Exception as exc:  # bad parameters or a broken pipeline: report, go on
            outcome.error = str(exc) or exc.__class__.__name__
            comparison.outcomes.append(outcome)
            continue
        outcome.status, outcome.error = run.status, run.error
        outcome.final_sql, outcome.result = run.final_sql, run.result
        outcome.calls, outcome.seconds = run.llm_calls, run.seconds
        outcome.prompt_tokens, outcome.completion_tokens = run.prompt_tokens, run.completion_tokens
        outcome.run = run
        comparison.outcomes.append(outcome)
    comparison.groups = agreement_groups(comparison.outcomes)
    for index, group in enumerate(comparison.groups):
        for name in group:
            comparison.outcome(name).group = index
    return comparison


def _tap(items, name: str, on_item: Callable[[str, Any], None]):
    for item in items:
        on_item(name, item)
        yield item


def agreement_groups(outcomes: list[PipelineOutcome]) -> list[list[str]]:
    """Pipelines grouped by equal results, largest group first; failed results are left out."""
    groups: list[tuple[dict, list[str]]] = []
    for outcome in outcomes:
        if not outcome.result_ok:
            continue
        for result, names in groups:
            if results_equal(result, outcome.result):
                names.append(outcome.pipeline)
                break
        else:
            groups.append((outcome.result, [outcome.pipeline]))
    ordered = sorted(groups, key=lambda g: -len(g[1]))  # stable: ties keep pipeline order
    return [names for _, names in ordered]
