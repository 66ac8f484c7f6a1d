"""What a pipeline declares: its parameters, its steps and which step may follow which. The
engine (:mod:`agents.core.engine`) runs these declarations and refuses any other transition, so
the declared graph is the graph that runs (``python -m agents graph NAME`` draws it)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable

from agents.core.step_context import StepContext
from agents.rules.registry import recorded_defaults

PAPER = "paper"    # ParamSpec.origin: an option of the pipeline's paper
STUDIO = "studio"  # ParamSpec.origin: a studio addition (a rule, a small-model variant)


@dataclass
class ParamSpec:
    """One user-settable pipeline parameter (shown in the CLI, the app and the harness).

    ``origin`` tells the paper's own options from what the studio added, so Settings can show
    them apart; ``under`` names the switch this one only matters under (Settings draws it
    nested beneath that switch). ``help`` is one line saying what it does: why a
    default was chosen, and what it measured, is written in ``bench/``.
    """

    name: str
    default: Any
    help: str = ""
    kind: str = ""  # int | float | bool | str | choice; inferred from default when empty
    choices: list | None = None
    min: float | None = None
    max: float | None = None
    origin: str = PAPER
    under: str | None = None

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
    # The post-hoc rules this pipeline uses, by name (:data:`agents.rules.registry.RULES`):
    # their switches are among ``params`` (``origin=STUDIO``).
    rules: tuple[str, ...] = ()
    # Options of the paper whose default changed, each with its default before: a run or an
    # evaluation recorded without the parameter ran with that value, not today's
    # (``resolve_recorded``). The rules' switches say theirs in the registry (``recorded_off``).
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

    def param_groups(self) -> dict[str, list[tuple[ParamSpec, list[ParamSpec]]]]:
        """The parameters as Settings draws them: the paper's options, then the studio's
        additions, each a list of ``(switch, the switches nested under it)`` in declared order.
        A switch nested under one of another group stays with its parent."""
        nested: dict[str, list[ParamSpec]] = {}
        names = {p.name for p in self.params}
        for p in self.params:
            if p.under in names:
                nested.setdefault(p.under, []).append(p)
        groups: dict[str, list[tuple[ParamSpec, list[ParamSpec]]]] = {PAPER: [], STUDIO: []}
        for p in self.params:
            if p.under not in names:
                groups[p.origin if p.origin in groups else STUDIO].append(
                    (p, nested.get(p.name, [])))
        return groups

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
        return self.resolve_params({**self.replay_defaults(), **(recorded or {})})

    def replay_defaults(self) -> dict[str, Any]:
        """Every parameter whose default changed since runs were recorded, with its default
        before: the paper's options (``earlier_defaults``) and the switches of the rules this
        pipeline uses that were turned on later (:func:`agents.rules.registry.recorded_defaults`)."""
        return {**recorded_defaults(self.name, self.rules), **self.earlier_defaults}

    def final_sql(self, data: dict) -> str | None:
        return data.get("sql")
