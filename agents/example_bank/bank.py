"""The example bank: question/SQL examples searched by question-skeleton similarity.

Examples come from the user's accepted answers (:meth:`ExampleBank.load_accepted`), from a
Spider-format dataset (:meth:`ExampleBank.from_spider_json`) or are added one by one. A search
masks the question the way the examples were masked, scores every skeleton at once
(:class:`~.index.SkeletonIndex`) and can keep one question type or leave a database out.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from .accepted import AcceptedSource, accepted_pairs
from .example import Example, ExampleBankError
from .index import SkeletonIndex, features
from .qtypes import QTYPES, classify_sql
from .skeleton import question_skeleton, schema_terms
from .spider import read_spider_examples


class ExampleBank:
    """Question/SQL examples with question-template retrieval, optionally per question type."""

    def __init__(self, examples: Iterable[Example] = ()):
        self._examples: list[Example] = []
        self._features: list[dict[str, int]] = []
        self._seen: set[tuple[str | None, str, str]] = set()
        self._db_terms: dict[str, set[tuple[str, ...]]] = {}
        self._index: SkeletonIndex | None = None
        for ex in examples:
            self.add(ex.question, ex.sql, db_id=ex.db_id, qtype=ex.qtype or None,
                     source=ex.source)

    # -- filling ------------------------------------------------------------------------------
    def set_schema_terms(self, db_id: str, terms: Iterable[tuple[str, ...]]) -> None:
        """Schema phrases to mask in the questions of ``db_id`` examples added after this."""
        self._db_terms[db_id] = set(terms)

    def add(self, question: str, sql: str, db_id: str | None = None, qtype: str | None = None,
            source: str = "user", author: str = "") -> Example | None:
        """Add one example; returns it, or None when the same one is already in the bank."""
        question = (question or "").strip()
        sql = (sql or "").strip()
        if not question or not sql:
            raise ExampleBankError("an example needs both a question and its SQL")
        if qtype is not None and qtype not in QTYPES:
            raise ExampleBankError(f"question type must be one of {', '.join(QTYPES)}, "
                                   f"not {qtype!r}")
        key = (db_id, question.lower(), " ".join(sql.lower().split()))
        if key in self._seen:
            return None
        self._seen.add(key)
        skeleton = question_skeleton(question, self._db_terms.get(db_id or "", ()))
        example = Example(question=question, sql=sql, db_id=db_id,
                          qtype=qtype or classify_sql(sql), source=source, skeleton=skeleton,
                          author=author)
        self._examples.append(example)
        self._features.append(features(skeleton))
        self._index = None
        return example

    def load_accepted(self, store: AcceptedSource, db_name: str | None = None,
                      schema: Any = None) -> int:
        """Add the store's accepted pairs (of ``db_name``, or all); returns how many were new.

        ``schema`` (the database's :class:`~agents.db.schema.Schema`) lets the questions' schema
        mentions be masked like the query's.
        """
        if schema is not None and db_name:
            self.set_schema_terms(db_name, schema_terms(schema))
        added = 0
        for question, sql, db, owner in accepted_pairs(store, db_name):
            if self.add(question, sql, db_id=db, source="accepted", author=owner) is not None:
                added += 1
        return added

    @classmethod
    def from_spider_json(cls, path: str | Path, tables_json: str | Path | None = None,
                         limit: int | None = None) -> "ExampleBank":
        """A bank of the examples in a Spider-format file (``[{db_id, question, query}]``).

        With ``tables_json`` (Spider's ``tables.json``) the table and column names of each
        example's database are masked in its question too.
        """
        bank = cls()
        terms, pairs = read_spider_examples(path, tables_json, limit)
        for db_id, db_terms in terms.items():
            bank.set_schema_terms(db_id, db_terms)
        for question, sql, db_id in pairs:
            bank.add(question, sql, db_id=db_id, source="dataset")
        if not bank:
            raise ExampleBankError(f"{path}: no usable examples (each item needs 'question' and "
                                   "'query')")
        return bank

    # -- reading ------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._examples)

    @property
    def examples(self) -> list[Example]:
        return list(self._examples)

    def counts_by_type(self) -> dict[str, int]:
        counts = {t: 0 for t in QTYPES}
        for ex in self._examples:
            counts[ex.qtype] += 1
        return counts

    def search(self, question: str, k: int = 5, qtype: str | None = None,
               exclude_db: str | None = None, entities: Iterable[str] | None = None,
               schema: Any = None, min_score: float = 0.0) -> list[Example]:
        """The ``k`` examples whose question skeleton is most like ``question``'s.

        ``qtype`` keeps one question type only; ``exclude_db`` drops that database's examples
        (for evaluation); ``entities`` and ``schema`` widen the masking of ``question``.
        Results carry their cosine ``score`` (> ``min_score``); duplicates of one SQL are
        returned once.
        """
        if k <= 0 or not self._examples:
            return []
        if qtype is not None and qtype not in QTYPES:
            raise ExampleBankError(f"question type must be one of {', '.join(QTYPES)}")
        index = self._compiled()
        terms = schema_terms(schema) if schema is not None else ()
        skeleton = question_skeleton(question, terms, entities or ())
        scores = index.score(features(skeleton))
        if qtype is not None:
            scores[index.qtypes != QTYPES.index(qtype)] = -1.0
        if exclude_db is not None:
            code = index.db_codes.get(exclude_db)
            if code is not None:
                scores[index.dbs == code] = -1.0
        candidates = np.flatnonzero(scores > min_score)
        if candidates.size == 0:
            return []
        pool = min(candidates.size, k * 4 + 8)
        top = candidates[np.argpartition(-scores[candidates], pool - 1)[:pool]]
        top = sorted(top.tolist(), key=lambda i: (-float(scores[i]), i))
        results: list[Example] = []
        seen_sql: set[str] = set()
        for i in top:
            ex = self._examples[i]
            norm = " ".join(ex.sql.lower().split())
            if norm in seen_sql:
                continue
            seen_sql.add(norm)
            results.append(replace(ex, score=round(float(scores[i]), 4)))
            if len(results) == k:
                break
        return results

    def _compiled(self) -> SkeletonIndex:
        if self._index is None:
            self._index = SkeletonIndex([e.qtype for e in self._examples],
                                        [e.db_id for e in self._examples], self._features)
        return self._index
