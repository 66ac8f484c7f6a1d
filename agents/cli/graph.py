"""``python -m agents graph``: a pipeline's declared step graph, as Mermaid or Graphviz DOT."""

from __future__ import annotations

import argparse

from agents.cli.options import pick_pipeline
from agents.core.graph import to_dot, to_mermaid
from agents.pipelines import names


def register(sub) -> None:
    p = sub.add_parser("graph", help="print a pipeline's step graph (Mermaid or DOT)",
                       description="Print the step graph a pipeline declares: which agent "
                                   "steps may follow which. The engine refuses any other "
                                   "transition, so this is the graph that runs.")
    p.add_argument("pipeline", choices=names(), help="the pipeline")
    p.add_argument("--format", choices=["mermaid", "dot"], default="mermaid",
                   help="mermaid (for Markdown) or dot (Graphviz)")
    p.set_defaults(func=cmd_graph)


def cmd_graph(args: argparse.Namespace) -> int:
    pipeline = pick_pipeline(args.pipeline)
    print(to_mermaid(pipeline) if args.format == "mermaid" else to_dot(pipeline))
    return 0
