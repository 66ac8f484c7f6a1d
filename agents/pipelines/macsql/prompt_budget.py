"""How MAC-SQL's prompts hold the schema: what schema retrieval fits, and what the Selector's
``context`` mode compares the database with."""

from __future__ import annotations

from ...retrieval import RetrievalSpec
from ..common import macsql_schema
from . import decomposer

# The Decomposer's prompt is the longest: ~2,000 tokens of instructions and worked examples
# besides the schema (~700 more with the graded variant's third demonstration); the Refiner's
# (~400 tokens of instructions) adds the SQL, its error and, with refiner_prompt=tables, the
# columns of the tables around a name error. A prompt still over the context fails its step
# with a clear message before the model is called.
RETRIEVAL = RetrievalSpec(forms=lambda params: [lambda schema: "\n".join(macsql_schema(schema))],
                          reserve=lambda params: 2600 + decomposer.extra_reserve(params))
