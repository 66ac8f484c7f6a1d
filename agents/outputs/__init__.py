"""What agents produce, as typed records: one small dataclass per *kind* of output.

Every :class:`~agents.core.events.StepEvent` names the kind of its output (``event.kind``) and keeps it
as plain JSON (``event.parsed``); ``event.output`` gives the typed record back. The Streamlit
trace views, the CLI's text view and the step editor all dispatch on the kind, with one generic
fallback, so no view ever guesses an output's meaning from an agent's display name or from the
keys a dict happens to hold.

Kinds used by several pipelines live in :mod:`agents.outputs.common`; a kind only one pipeline
produces lives beside that pipeline (``agents/pipelines/<name>/outputs.py``) and registers itself
the same way. Runs stored before kinds existed are read through :func:`infer_kind`.
"""

from .base import Generic, Output, infer_kind, kinds, load, register
from .common import (Decomposition, ExecutionCheck, FreshSQL, ResultSummary, SchemaSelection,
                     SQLDraft, SQLRepair, ValueMatches)

__all__ = ["Output", "Generic", "register", "load", "kinds", "infer_kind", "SQLDraft",
           "SchemaSelection", "Decomposition", "SQLRepair", "ExecutionCheck", "FreshSQL",
           "ResultSummary", "ValueMatches"]
