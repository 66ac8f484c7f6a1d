"""Few-shot examples for SQL generation, retrieved by question-template similarity.

DEA-SQL picks its few-shot examples by *question template*: the entities of a question (values,
names, schema mentions) are masked so that "How many singers are from France?" and "How many
ships were built in 1990?" share one skeleton, ``how many <m> are from <m>``. Examples are also
grouped by question type (EASY / JOIN / NESTED / JOIN-NESTED), derived here from their SQL, so a
pipeline can ask for examples of the type it is about to write.

Examples come from the user's accepted (question, SQL) pairs, loaded from the run store through a
one-method interface (:class:`AcceptedSource`), and optionally from a dataset in Spider format
(``[{db_id, question, query}]``) read from wherever it lies; nothing is copied or persisted here.

Retrieval is TF-IDF cosine over skeleton unigrams and bigrams with an inverted index compiled to
numpy arrays: a search over 10,000 examples costs about a millisecond and needs no network.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Iterable, Protocol

import numpy as np
import sqlglot
from sqlglot.tokens import TokenType

EASY, JOIN, NESTED, JOIN_NESTED = "EASY", "JOIN", "NESTED", "JOIN-NESTED"
QTYPES = (EASY, JOIN, NESTED, JOIN_NESTED)
MASK = "<m>"


class ExampleBankError(ValueError):
    """A dataset or example could not be used; the message says what to fix."""


@dataclass
class Example:
    question: str
    sql: str
    db_id: str | None = None
    qtype: str = EASY
    source: str = "user"  # "accepted" (from the store) | "dataset" | "user" (added directly)
    skeleton: str = ""
    score: float = 0.0

    def to_dict(self) -> dict:
        return asdict(self)


class AcceptedSource(Protocol):
    """What the bank needs from the run store: the accepted (question, SQL) pairs of a database.

    Each record may be a mapping or an object with ``question`` and ``sql`` attributes.
    """

    def list_accepted(self, db_name: str | None = None) -> Iterable[Any]: ...


# -- question type from SQL ------------------------------------------------------------------

_SET_OPS = {TokenType.UNION, TokenType.INTERSECT, TokenType.EXCEPT}
_FROM_ENDS = {TokenType.WHERE, TokenType.GROUP_BY, TokenType.ORDER_BY, TokenType.HAVING,
              TokenType.LIMIT, TokenType.UNION, TokenType.INTERSECT, TokenType.EXCEPT,
              TokenType.R_PAREN}
_TOKENIZER = sqlglot.Dialect.get_or_raise("sqlite").tokenizer_class()


def classify_sql(sql: str) -> str:
    """The DEA-SQL question type of ``sql``: does it join tables, does it nest queries?

    JOIN: a JOIN keyword or a comma between tables in a FROM clause. NESTED: a second SELECT
    (subquery) or a set operation (UNION / INTERSECT / EXCEPT). Uses sqlglot's tokenizer rather
    than its parser: the same answer on well-formed SQL at a fifth of the cost, and it still
    answers for SQL the parser rejects.
    """
    try:
        tokens = _TOKENIZER.tokenize(sql or "")
    except Exception:  # untokenizable text: fall back to keywords
        upper = f" {(sql or '').upper()} "
        join = " JOIN " in upper
        nested = upper.count("SELECT") > 1 or any(
            f" {op} " in upper for op in ("UNION", "INTERSECT", "EXCEPT"))
        return _qtype(join, nested)
    join = nested = False
    selects = 0
    depth = 0
    from_depth: list[int] = []  # parenthesis depths at which a FROM clause is open
    for tok in tokens:
        kind = tok.token_type
        if kind == TokenType.L_PAREN:
            depth += 1
            continue
        if kind == TokenType.R_PAREN:
            while from_depth and from_depth[-1] >= depth:
                from_depth.pop()
            depth -= 1
            continue
        if kind == TokenType.SELECT:
            selects += 1
        elif kind in _SET_OPS:
            nested = True
        elif kind == TokenType.JOIN:
            join = True
        elif kind == TokenType.FROM:
            from_depth.append(depth)
        elif kind in _FROM_ENDS and from_depth and from_depth[-1] == depth:
            from_depth.pop()
        elif kind == TokenType.COMMA and from_depth and from_depth[-1] == depth:
            join = True
    return _qtype(join, nested or selects > 1)


def _qtype(join: bool, nested: bool) -> str:
    if join and nested:
        return JOIN_NESTED
    return JOIN if join else (NESTED if nested else EASY)


# -- question skeleton -----------------------------------------------------------------------

# Words that carry the question's logic, never masked even when a column has that name.
_KEEP = frozenset("""
a an the of in on at for to from by with without and or not no is are was were be been do does
did has have had what which who whom whose where when how many much each every all any some that
this these those than then there their its it as per both either neither only also more most less
least fewer fewest number count total sum average avg mean max min maximum minimum highest lowest
largest smallest greatest top first last different distinct unique order ordered sorted ascending
descending list show find give return tell me name names
""".split())
_QUOTED = re.compile(r'"[^"]*"|“[^”]*”|‘[^’]*’|(?<!\w)\'[^\']+\'(?!\w)')
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+(?:[.,]\d+)*(?:st|nd|rd|th)?|\S")
_MAX_PHRASE = 4


def _stem(word: str) -> str:
    """A light plural folding so 'students' matches a table named 'student'."""
    w = word.lower()
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
        return w[:-1]
    return w


def _phrase(text: str) -> tuple[str, ...]:
    """Normalised word tuple of a schema name or entity: snake_case and camelCase split."""
    text = re.sub(r"([a-z])([A-Z])", r"\1 \2", str(text)).replace("_", " ")
    return tuple(_stem(w) for w in re.findall(r"[A-Za-z0-9]+", text))


def schema_terms(schema: Any) -> set[tuple[str, ...]]:
    """Table names, column names and short text values of ``schema`` as maskable phrases.

    ``schema`` is an :class:`agents.schema.Schema` or anything with ``tables``, each with
    ``name`` and ``columns`` (``name``, optional ``examples``).
    """
    terms: set[tuple[str, ...]] = set()
    for table in getattr(schema, "tables", []) or []:
        terms.add(_phrase(table.name))
        for column in getattr(table, "columns", []) or []:
            terms.add(_phrase(column.name))
            for value in getattr(column, "examples", None) or []:
                if isinstance(value, str) and 2 < len(value) <= 40:
                    terms.add(_phrase(value))
    return _maskable(terms)


def spider_schema_terms(entry: dict) -> set[tuple[str, ...]]:
    """Maskable phrases from one ``tables.json`` entry (original and natural names)."""
    names = list(entry.get("table_names_original") or []) + list(entry.get("table_names") or [])
    for key in ("column_names_original", "column_names"):
        names += [c[1] for c in entry.get(key) or [] if c and c[1] != "*"]
    return _maskable({_phrase(n) for n in names})


def _maskable(terms: Iterable[tuple[str, ...]]) -> set[tuple[str, ...]]:
    return {t for t in terms if t and len(t) <= _MAX_PHRASE and not all(w in _KEEP for w in t)}


def question_skeleton(question: str, terms: Iterable[tuple[str, ...]] = (),
                      entities: Iterable[str] = ()) -> str:
    """The question's template: values, names and schema mentions replaced by ``<m>``.

    Masked: quoted strings, numbers, capitalised words after the first word, phrases in
    ``terms`` (see :func:`schema_terms`) and short ``entities`` (up to four words after leading
    articles; a long descriptive entity would erase the template itself).
    """
    phrases = set(terms)
    for entity in entities or ():
        words = list(_phrase(entity))
        while words and words[0] in ("the", "a", "an"):
            words.pop(0)
        if words and len(words) <= _MAX_PHRASE and not all(w in _KEEP for w in words):
            phrases.add(tuple(words))
    text = _QUOTED.sub(f" {MASK} ", question or "")
    raw = _WORD.findall(text.replace(MASK, " \x00 "))
    out: list[str] = []
    stems = [_stem(w) for w in raw]
    i = 0
    sentence_start = True
    while i < len(raw):
        word = raw[i]
        if word == "\x00" or word[0].isdigit():
            out.append(MASK)
            i += 1
            sentence_start = False
            continue
        if not word[0].isalnum() and word[0] != "_":
            sentence_start = word in ".?!"
            i += 1
            continue
        matched = 0
        for n in range(min(_MAX_PHRASE, len(raw) - i), 0, -1):
            if tuple(stems[i:i + n]) in phrases:
                matched = n
                break
        if matched:
            out.append(MASK)
            i += matched
        elif word[0].isupper() and not sentence_start and word.lower() not in _KEEP:
            out.append(MASK)
            i += 1
        else:
            out.append(stems[i])
            i += 1
        sentence_start = False
    collapsed = [w for j, w in enumerate(out) if not (w == MASK and j and out[j - 1] == MASK)]
    return " ".join(collapsed)


def _features(skeleton: str) -> dict[str, int]:
    words = skeleton.split()
    counts: dict[str, int] = {}
    for w in words:
        counts[w] = counts.get(w, 0) + 1
    padded = ["^"] + words + ["$"]
    for a, b in zip(padded, padded[1:]):
        key = f"{a} {b}"
        counts[key] = counts.get(key, 0) + 1
    return counts


# -- the bank --------------------------------------------------------------------------------

class ExampleBank:
    """Question/SQL examples with question-template retrieval, optionally per question type."""

    def __init__(self, examples: Iterable[Example] = ()):
        self._examples: list[Example] = []
        self._features: list[dict[str, int]] = []
        self._seen: set[tuple[str | None, str, str]] = set()
        self._db_terms: dict[str, set[tuple[str, ...]]] = {}
        self._index: _Index | None = None
        for ex in examples:
            self.add(ex.question, ex.sql, db_id=ex.db_id, qtype=ex.qtype or None,
                     source=ex.source)

    # -- filling ------------------------------------------------------------------------------
    def set_schema_terms(self, db_id: str, terms: Iterable[tuple[str, ...]]) -> None:
        """Schema phrases to mask in the questions of ``db_id`` examples added after this."""
        self._db_terms[db_id] = set(terms)

    def add(self, question: str, sql: str, db_id: str | None = None, qtype: str | None = None,
            source: str = "user") -> Example | None:
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
                          qtype=qtype or classify_sql(sql), source=source, skeleton=skeleton)
        self._examples.append(example)
        self._features.append(_features(skeleton))
        self._index = None
        return example

    def load_accepted(self, store: AcceptedSource, db_name: str | None = None,
                      schema: Any = None) -> int:
        """Add the store's accepted pairs (of ``db_name``, or all); returns how many were new.

        ``schema`` (the database's :class:`~agents.schema.Schema`) lets the questions' schema
        mentions be masked like the query's.
        """
        if schema is not None and db_name:
            self.set_schema_terms(db_name, schema_terms(schema))
        added = 0
        for record in store.list_accepted(db_name) or []:
            question = _field(record, "question")
            sql = _field(record, "sql")
            if not question or not sql:
                continue
            db = _field(record, "db_name") or db_name
            if self.add(str(question), str(sql), db_id=db, source="accepted") is not None:
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
        items = _read_json_list(path, "examples file")
        if tables_json is not None:
            for entry in _read_json_list(tables_json, "tables file"):
                if isinstance(entry, dict) and entry.get("db_id"):
                    bank.set_schema_terms(entry["db_id"], spider_schema_terms(entry))
        for item in items[:limit] if limit else items:
            if not isinstance(item, dict):
                continue
            question, sql = item.get("question"), item.get("query") or item.get("sql")
            if isinstance(question, str) and isinstance(sql, str) and question and sql:
                bank.add(question, sql, db_id=item.get("db_id"), source="dataset")
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
        scores = index.score(_features(skeleton))
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

    def _compiled(self) -> "_Index":
        if self._index is None:
            self._index = _Index(self._examples, self._features)
        return self._index


class _Index:
    """The inverted index as numpy arrays: feature -> (example ids, L2-normalised weights)."""

    def __init__(self, examples: list[Example], features: list[dict[str, int]]):
        n = len(examples)
        postings: dict[str, tuple[list[int], list[float]]] = {}
        for i, feats in enumerate(features):
            for f, tf in feats.items():
                ids, tfs = postings.setdefault(f, ([], []))
                ids.append(i)
                tfs.append(1.0 + math.log(tf))
        self.idf = {f: math.log((n + 1) / (len(ids) + 1)) + 1.0 for f, (ids, _) in postings.items()}
        self.unseen_idf = math.log(n + 1) + 1.0
        norms = np.zeros(n, dtype=np.float64)
        arrays: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for f, (ids, tfs) in postings.items():
            id_arr = np.asarray(ids, dtype=np.int32)
            w_arr = np.asarray(tfs, dtype=np.float64) * self.idf[f]
            norms[id_arr] += w_arr * w_arr
            arrays[f] = (id_arr, w_arr)
        norms = np.sqrt(norms)
        norms[norms == 0] = 1.0
        self.postings = {f: (ids, (w / norms[ids]).astype(np.float32))
                         for f, (ids, w) in arrays.items()}
        self.size = n
        self.qtypes = np.asarray([QTYPES.index(e.qtype) for e in examples], dtype=np.int8)
        self.db_codes: dict[str, int] = {}
        self.dbs = np.asarray([self.db_codes.setdefault(e.db_id or "", len(self.db_codes))
                               for e in examples], dtype=np.int32)

    def score(self, feats: dict[str, int]) -> np.ndarray:
        scores = np.zeros(self.size, dtype=np.float32)
        weights = {f: (1.0 + math.log(tf)) * self.idf.get(f, self.unseen_idf)
                   for f, tf in feats.items()}
        norm = math.sqrt(sum(w * w for w in weights.values())) or 1.0
        for f, w in weights.items():
            posting = self.postings.get(f)
            if posting is not None:
                ids, doc_w = posting
                scores[ids] += doc_w * np.float32(w / norm)
        return scores


def _field(record: Any, name: str) -> Any:
    if isinstance(record, dict):
        return record.get(name)
    return getattr(record, name, None)


def _read_json_list(path: str | Path, what: str) -> list:
    p = Path(path)
    if not p.is_file():
        raise ExampleBankError(f"{what} not found: {p}")
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ExampleBankError(f"{what} {p} is not valid JSON: {exc}") from None
    if not isinstance(data, list):
        raise ExampleBankError(f"{what} {p} must hold a JSON list")
    return data


def load_imported(path: str | Path) -> list[Example]:
    """Examples of a Spider-format file, with its sibling ``tables.json`` when there is one
    (so schema mentions in the questions are masked like the queries' names)."""
    path = Path(path)
    tables = path.parent / "tables.json"
    return ExampleBank.from_spider_json(path, tables_json=tables if tables.is_file() else None
                                        ).examples


def bank_for(db: Any, store: AcceptedSource | None = None,
             imported: Iterable[Example] = ()) -> ExampleBank:
    """The example bank a run on ``db`` uses: ``imported`` examples plus the answers accepted
    for this database in ``store``. A store that cannot be read leaves the bank without them
    rather than failing the run."""
    bank = ExampleBank(imported)
    if store is not None:
        try:
            bank.load_accepted(store, db.name, schema=db.schema)
        except Exception:  # the examples are a help, never a reason for a run to fail
            pass
    return bank
