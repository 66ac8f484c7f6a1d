"""The unseen-schema question sets: generated databases whose every gold query runs, returns
data and orders its rows without a tie."""

from __future__ import annotations

import importlib.util
import json
import sqlite3
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _bench():
    spec = importlib.util.spec_from_file_location("unseen_sets", ROOT / "bench" / "unseen_sets.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_set_builds_with_checked_gold_and_the_same_file_twice(tmp_path):
    bench = _bench()
    for name in bench.SETS:
        first = bench.build(name, tmp_path / "a")
        second = bench.build(name, tmp_path / "b")
        assert first["questions"] >= 30 and first["unread"] + first["study"] == first["questions"]
        a, b = (sqlite3.connect(p["database"]) for p in (first, second))
        dump = [list(c.iterdump()) for c in (a, b)]
        assert dump[0] == dump[1]  # one seed, one database
        unread = json.loads((tmp_path / "a" / name / "unread.json").read_text())
        assert {q["question_id"] for q in unread} == {
            q["question_id"] for q in json.loads((tmp_path / "b" / name / "unread.json").read_text())}


def test_a_gold_query_cut_by_a_tie_or_finding_nothing_is_refused(tmp_path):
    bench = _bench()
    path = tmp_path / "t.sqlite"
    with sqlite3.connect(path) as conn:
        conn.executescript("CREATE TABLE t (name TEXT, n INTEGER);"
                           "INSERT INTO t VALUES ('a', 2), ('b', 2), ('c', 1);")
    with pytest.raises(bench.GoldError, match="decided by a tie"):
        bench.check([{"query": "SELECT name FROM t ORDER BY n DESC LIMIT 1"}], path)
    with pytest.raises(bench.GoldError, match="decided by a tie"):
        bench.check([{"query": "SELECT name, n AS k FROM t ORDER BY k"}], path)
    with pytest.raises(bench.GoldError, match="returns no data"):
        bench.check([{"query": "SELECT name FROM t WHERE n > 5"}], path)
    assert bench.check([{"query": "SELECT name FROM t ORDER BY n, name LIMIT 2"}], path)
