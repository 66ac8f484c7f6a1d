"""A pipeline's declared step graph as text: Graphviz DOT for the app, Mermaid for the docs.

The drawing is made from ``Pipeline.steps`` and their ``then`` lists -- the same declaration
the engine enforces -- so it cannot drift from what runs. Given the steps a run went through,
the DOT drawing marks them, which shows a run's path (a loop taken three times, a branch never
taken) at a glance.
"""

from __future__ import annotations

from collections import Counter
from typing import Iterable

from agents.core.engine import Pipeline

_END = "end"


def _node_id(name: str | None) -> str:
    return _END if name is None else "s_" + "".join(c if c.isalnum() else "_" for c in name)


def _label(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def to_dot(pipeline: Pipeline, visited: Iterable[str] = ()) -> str:
    """DOT text of the graph; ``visited`` (step names of a run, ``extract:2`` counts as
    ``extract``) are filled and labelled with how often they ran."""
    runs = Counter(name.partition(":")[0] for name in visited)
    lines = [f'digraph "{_label(pipeline.name)}" {{', "  rankdir=LR;",
             '  node [shape=box, style="rounded,filled", fillcolor=white, fontname=Helvetica, '
             'fontsize=11];', '  edge [color="#666666"];',
             f'  {_END} [label="end", shape=circle, fillcolor="#eeeeee", fontsize=9];']
    for step in pipeline.steps:
        agent = _label(step.agent.replace("{arg}", "k") if step.takes_arg else step.agent)
        label = f"{agent}\\n{_label(step.title)}" if step.title else agent
        fill = "#d7ecff" if runs[step.name] else "white"
        times = f" (×{runs[step.name]})" if runs[step.name] > 1 else ""
        lines.append(f'  {_node_id(step.name)} [label="{label}{times}", fillcolor="{fill}"];')
    for source, target in pipeline.edges():
        lines.append(f"  {_node_id(source)} -> {_node_id(target)};")
    lines.append("}")
    return "\n".join(lines)


def to_mermaid(pipeline: Pipeline) -> str:
    """Mermaid flowchart text of the graph (for Markdown documentation)."""
    lines = ["flowchart LR"]
    for step in pipeline.steps:
        text = f"{step.agent.replace('{arg}', 'k')}: {step.title}".replace('"', "#quot;")
        lines.append(f'  {_node_id(step.name)}["{text}"]')
    lines.append(f"  {_END}((end))")
    for source, target in pipeline.edges():
        lines.append(f"  {_node_id(source)} --> {_node_id(target)}")
    return "\n".join(lines)
