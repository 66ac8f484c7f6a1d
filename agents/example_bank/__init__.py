"""Few-shot examples for SQL generation, retrieved by question-template similarity.

DEA-SQL picks its few-shot examples by *question template*: the entities of a question (values,
names, schema mentions) are masked so that "How many singers are from France?" and "How many
ships were built in 1990?" share one skeleton, ``how many <m> are from <m>``. Examples are also
grouped by question type (EASY / JOIN / NESTED / JOIN-NESTED), derived from their SQL, so a
pipeline can ask for examples of the type it is about to write.

Examples come from the user's accepted (question, SQL) pairs, loaded from the run store through a
one-method interface (:class:`AcceptedSource`), and optionally from a dataset in Spider format
(``[{db_id, question, query}]``) read from wherever it lies; nothing is copied or persisted here.

One concept per module: :mod:`.qtypes` (question type from SQL), :mod:`.skeleton` (masking),
:mod:`.index` (TF-IDF similarity), :mod:`.example` (the record), :mod:`.spider` and
:mod:`.accepted` (the two sources), :mod:`.bank` (:class:`ExampleBank`) and :mod:`.loading`
(the bank a run uses).
"""

from __future__ import annotations

from .accepted import AcceptedSource
from .bank import ExampleBank
from .example import Example, ExampleBankError
from .loading import STORE_READ_ERRORS, bank_for, load_imported
from .qtypes import EASY, JOIN, JOIN_NESTED, NESTED, QTYPES, classify_sql
from .skeleton import MASK, question_skeleton, schema_terms, spider_schema_terms

__all__ = [
    "EASY", "JOIN", "JOIN_NESTED", "MASK", "NESTED", "QTYPES", "STORE_READ_ERRORS",
    "AcceptedSource", "Example", "ExampleBank", "ExampleBankError", "bank_for", "classify_sql",
    "load_imported", "question_skeleton", "schema_terms", "spider_schema_terms",
]
