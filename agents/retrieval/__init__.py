"""Schema retrieval: the part of a large schema a question needs, within the prompt budget.

:mod:`.ranking` ranks tables for a question (BM25 over names, descriptions, foreign keys and
values), :mod:`.fit` keeps what fits with its join paths, and :mod:`.stage` is the pipeline step
that does both when a database's schema is too long for the model's context.
"""

from .fit import NothingFits, fit
from .outputs import SchemaRetrieval
from .ranking import rank
from .stage import (RETRIEVE, STATE_KEY, RetrievalSpec, Retrieving, over_budget,
                    retrieval_step, schema_budget, whole_schema_fit)

__all__ = ["NothingFits", "fit", "SchemaRetrieval", "rank", "RETRIEVE", "STATE_KEY",
           "RetrievalSpec", "Retrieving", "over_budget", "retrieval_step", "schema_budget",
           "whole_schema_fit"]
