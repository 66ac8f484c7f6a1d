"""The demo databases: deterministic, referentially sound and realistic, with working reference
SQL."""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
from pathlib import Path

import pytest

from sample_dbs import catalog, ensure_built
from sample_dbs.build import build_all, main

NAMES = ["shop", "university", "library"]

ROW_RANGES = {
    "shop": {"categories": (8, 15), "products": (60, 150), "customers": (500, 2000),
             "orders": (2000, 6000), "order_items": (4000, 15000), "payments": (2000, 6000),
             "reviews": (300, 3000)},
    "university": {"departments": (6, 12), "instructors": (40, 100), "students": (800, 3000),
                   "courses": (40, 80), "prerequisites": (20, 100), "terms": (6, 10),
                   "sections": (200, 800), "enrollments": (8000, 30000)},
    "library": {"branches": (3, 6), "publishers": (8, 20), "authors": (150, 400),
                "books": (500, 1000), "book_authors": (500, 1500), "members": (800, 2000),
                "loans": (3000, 12000)},
}


def _connect(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


def _content_digest(path: Path) -> dict[str, str]:
    """One hash per table over its schema and every row, in primary-key order."""
    conn = _connect(path)
    try:
        digests = {}
        tables = conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE type='table' ORDER BY name")
        for name, sql in tables.fetchall():
            h = hashlib.sha256(sql.encode())
            for row in conn.execute(f'SELECT * FROM "{name}" ORDER BY 1, 2'):
                h.update(repr(row).encode())
            digests[name] = h.hexdigest()
        return digests
    finally:
        conn.close()


def test_build_all_is_deterministic_and_returns_paths(sample_dbs, tmp_path):
    paths = build_all(tmp_path)
    assert [p.name for p in paths] == [f"{n}.sqlite" for n in NAMES]
    assert not list(tmp_path.glob("*.building"))
    for path in paths:
        assert path.parent == tmp_path and 100_000 < path.stat().st_size < 5_000_000
        first = sample_dbs / path.name
        assert _content_digest(path) == _content_digest(first), path.name
        assert path.read_bytes() == first.read_bytes(), path.name


@pytest.mark.parametrize("name", NAMES)
def test_foreign_keys_declared_and_valid(sample_dbs, name):
    conn = _connect(sample_dbs / f"{name}.sqlite")
    assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    with_fk = [t for t in tables if conn.execute(f'PRAGMA foreign_key_list("{t}")').fetchall()]
    assert len(with_fk) >= 4
    for t in tables:  # every table has a declared primary key
        assert any(col[5] for col in conn.execute(f'PRAGMA table_info("{t}")')), t


@pytest.mark.parametrize("name", NAMES)
def test_row_counts_in_expected_ranges(sample_dbs, name):
    conn = _connect(sample_dbs / f"{name}.sqlite")
    for table, (low, high) in ROW_RANGES[name].items():
        count = conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
        assert low <= count <= high, (table, count)


def test_shop_data_is_plausible(sample_dbs):
    conn = _connect(sample_dbs / "shop.sqlite")
    lo, hi = conn.execute("SELECT MIN(order_date), MAX(order_date) FROM orders").fetchone()
    assert lo >= "2023-01-01" and hi <= "2024-12-31"
    statuses = dict(conn.execute("SELECT status, COUNT(*) FROM orders GROUP BY status").fetchall())
    assert set(statuses) == {"delivered", "shipped", "cancelled", "returned"}
    assert statuses["delivered"] > 0.7 * sum(statuses.values())
    # No order before its customer signed up; cancelled orders never shipped nor paid.
    assert conn.execute("SELECT COUNT(*) FROM orders o JOIN customers c USING (customer_id) "
                        "WHERE o.order_date < c.signup_date").fetchone()[0] == 0
    assert conn.execute("SELECT COUNT(*) FROM orders WHERE status='cancelled' AND "
                        "(shipped_date IS NOT NULL OR order_id IN (SELECT order_id FROM payments))"
                        ).fetchone()[0] == 0
    # Skewed, not uniform: the best-selling product sells far more than the median one.
    counts = [r[0] for r in conn.execute(
        "SELECT COUNT(*) FROM order_items GROUP BY product_id ORDER BY 1 DESC")]
    assert counts[0] > 4 * counts[len(counts) // 2]
    assert conn.execute("SELECT COUNT(*) FROM customers WHERE phone IS NULL").fetchone()[0] > 0


def test_university_and_library_have_realistic_nulls(sample_dbs):
    uni = _connect(sample_dbs / "university.sqlite")
    assert uni.execute("SELECT COUNT(*) FROM enrollments e JOIN sections s USING (section_id) "
                       "JOIN terms t USING (term_id) WHERE t.name='Fall 2024' "
                       "AND e.grade IS NOT NULL").fetchone()[0] == 0
    assert uni.execute("SELECT COUNT(*) FROM enrollments WHERE grade='W' AND grade_points IS NULL"
                       ).fetchone()[0] > 0
    assert uni.execute("SELECT COUNT(*) FROM students WHERE major_dept_id IS NULL"
                       ).fetchone()[0] > 0
    lib = _connect(sample_dbs / "library.sqlite")
    open_loans, late = lib.execute(
        "SELECT SUM(return_date IS NULL), SUM(return_date > due_date) FROM loans").fetchone()
    assert open_loans > 0 and late > 0
    assert lib.execute("SELECT COUNT(*) FROM loans WHERE return_date < loan_date"
                       ).fetchone()[0] == 0
    assert lib.execute("SELECT COUNT(*) FROM loans WHERE fine > 0 AND "
                       "(return_date IS NULL OR return_date <= due_date)").fetchone()[0] == 0


def test_catalog_describes_every_database(sample_dbs):
    cat = catalog()
    assert list(cat) == NAMES
    for name, entry in cat.items():
        assert entry["file"] == f"{name}.sqlite"
        assert entry["title"] and entry["description"]
        assert 6 <= len(entry["questions"]) <= 10
        assert {q["difficulty"] for q in entry["questions"]} == {"easy", "medium", "hard"}


@pytest.mark.parametrize("name", NAMES)
def test_every_reference_sql_returns_rows(sample_dbs, name):
    entry = catalog()[name]
    conn = _connect(sample_dbs / entry["file"])
    for q in entry["questions"]:
        rows = conn.execute(q["sql"]).fetchall()
        assert rows, q["question"]
        assert rows[0][0] is not None, q["question"]


def test_ensure_built_builds_only_when_missing(sample_dbs, tmp_path, monkeypatch):
    import sample_dbs.build as build_module

    calls = []
    monkeypatch.setattr(build_module, "build_all", lambda folder: calls.append(Path(folder)))
    for name in NAMES:
        shutil.copy(sample_dbs / f"{name}.sqlite", tmp_path)
    paths = ensure_built(tmp_path)
    assert calls == [] and paths == {n: tmp_path / f"{n}.sqlite" for n in NAMES}
    (tmp_path / "library.sqlite").unlink()
    ensure_built(tmp_path)
    assert calls == [tmp_path]


def test_command_line_builds_into_out(sample_dbs, tmp_path, monkeypatch, capsys):
    import sample_dbs.build as build_module

    folders = []

    def fake_build_all(folder):  # the real build is covered above; this checks the wiring
        folders.append(folder)
        return [sample_dbs / f"{n}.sqlite" for n in NAMES]

    monkeypatch.setattr(build_module, "build_all", fake_build_all)
    assert main(["--out", str(tmp_path / "dbs")]) == 0
    assert folders == [tmp_path / "dbs"]
    printed = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in printed] == [str(sample_dbs / f"{n}.sqlite") for n in NAMES]
    assert main([]) == 0 and folders[-1] == build_module.SAMPLE_DIR
