"""Build Spider's dev databases with renamed schemas, with the questions no evaluation holds.

Each dev database is copied with its tables and columns renamed to synonyms and abbreviations
(:mod:`agents.evaluation.renaming`; keys, types and every row kept), and each of its questions
gets its gold SQL rewritten to the new names. A question is kept only when

- no committed evaluation (``bench/results/*/results.jsonl``) holds it and no pipeline prompt
  quotes it: the questions of every sample read so far are left out, so the whole set is unread;
- its rewritten gold SQL returns the same rows on the renamed copy as the original on the
  original (:func:`agents.evaluation.metric.result_eq`), both under a time limit.

The kept questions are split in two halves by a hash of each question's id, so a question's half
never changes between builds (a rebuild may only leave out more, as evaluations are committed):
``study.json`` may be read to find kinds of failure, ``unread.json`` is for reporting only
(never look at its traces). ``dev.json`` holds both. Nothing here is committed: the data is
Spider's (``bench/runs/`` is ignored), and this script rebuilds it in a few seconds::

    python bench/renamed_spider.py --data ../shared/data/spider --out bench/runs/spider-renamed
    python -m agents eval --data bench/runs/spider-renamed/unread.json --pipelines baseline \\
        --limit 100 --sample stratified --seed 1 --provider local --no-cache --out bench/runs/x

``summary.json`` in ``--out`` says how many questions were kept and why the others were not, and
which names each database got.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sqlite3
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from agents.evaluation.dataset import load_dataset  # noqa: E402
from agents.evaluation.metric import order_matters, result_eq  # noqa: E402
from agents.evaluation.prompt_overlap import quoted_questions  # noqa: E402
from agents.evaluation.renaming import RenameError, plan, rename_sql  # noqa: E402
from merge_spider import _tables, table_ddl  # noqa: E402

from agents.db.identifiers import quote_identifier as q  # noqa: E402

QUERY_SECONDS = 20.0
SPLIT_SEED = 56


def read_question_ids(results: Path = ROOT / "bench" / "results") -> set[int]:
    """Every Spider dev question a committed evaluation of Spider dev holds: the questions
    read so far. Evaluations of other sets (this one, the unseen databases) are not reads of
    Spider dev, though their questions are numbered alike."""
    seen: set[int] = set()
    for path in results.glob("*/results.jsonl"):
        if not _of_spider_dev(path.parent):
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                qid = json.loads(line).get("question_id")
            except (json.JSONDecodeError, AttributeError):
                continue
            if isinstance(qid, int):
                seen.add(qid)
    return seen


def _of_spider_dev(folder: Path) -> bool:
    """Whether the evaluation in ``folder`` ran on Spider dev itself (by its manifest; a folder
    without one is counted, to err towards leaving questions out)."""
    try:
        dataset = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))["dataset"]
    except (OSError, ValueError, KeyError, TypeError):
        return True
    # bench/unread_pool.py's pool is Spider dev's own questions (the seed-12 and seed-13
    # samples were drawn from one written to /tmp/pool)
    return Path(str(dataset)).name in ("spider", "unread-pool", "pool") or \
        str(dataset).rstrip("/").endswith("data/spider")


def schema_of(conn: sqlite3.Connection) -> dict[str, list[str]]:
    return {t: [r[1] for r in conn.execute(f"PRAGMA table_info({q(t)})")] for t in _tables(conn)}


def build_database(source: Path, target: Path) -> tuple[dict, object]:
    """The renamed copy of ``source`` at ``target``; returns the names given and the plan."""
    with sqlite3.connect(f"file:{source}?mode=ro", uri=True) as conn:
        schema = schema_of(conn)
    renaming = plan(schema)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.unlink(missing_ok=True)
    out = sqlite3.connect(target)
    try:
        out.execute("ATTACH DATABASE ? AS src", (f"file:{source}?mode=ro",))
        folded = {t.casefold(): t for t in schema}
        for table, columns in schema.items():
            info = out.execute(f"PRAGMA src.table_info({q(table)})").fetchall()
            keys = [renaming.column(r[1]) for r in sorted((r for r in info if r[5]),
                                                          key=lambda r: r[5])]
            references = []
            for fk in out.execute(f"PRAGMA src.foreign_key_list({q(table)})").fetchall():
                parent = folded.get(str(fk[2]).casefold())
                if parent is not None and fk[4] is not None:
                    references.append((renaming.column(fk[3]), renaming.table(parent),
                                       renaming.column(fk[4])))
            out.execute(table_ddl(renaming.table(table),
                                  [(renaming.column(r[1]), r[2]) for r in info], keys,
                                  references))
            out.execute(f"INSERT INTO main.{q(renaming.table(table))} "
                        f"SELECT * FROM src.{q(table)}")
        out.commit()
        out.execute("DETACH DATABASE src")
    finally:
        out.close()
    return {"tables": renaming.tables, "columns": renaming.columns}, renaming


def run(path: Path, sql: str) -> list | None:
    """The rows of ``sql`` on ``path`` (read-only), or None when it fails or takes too long."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    deadline = time.monotonic() + QUERY_SECONDS
    conn.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)
    try:
        return conn.execute(sql).fetchall()
    except sqlite3.Error:
        return None
    finally:
        conn.close()


def half_of(qid: int, seed: int = SPLIT_SEED) -> str:
    """"study" or "unread" for question ``qid``: fixed by a hash of it, whatever else is built."""
    digest = hashlib.sha256(f"{seed}:{qid}".encode()).digest()
    return "study" if digest[0] % 2 == 0 else "unread"


def split(items: list[dict], seed: int = SPLIT_SEED) -> tuple[list[dict], list[dict]]:
    """The questions to study and those to leave unread (:func:`half_of`)."""
    study = [item for item in items if half_of(item["question_id"], seed) == "study"]
    return study, [item for item in items if half_of(item["question_id"], seed) == "unread"]


def _clear(out: Path) -> None:
    """Empty ``out`` for a new build, only if it is missing, empty or an earlier build."""
    if out.exists() and any(out.iterdir()) and not (out / "summary.json").is_file():
        raise SystemExit(f"{out} holds other files: give an empty or new --out")
    if out.exists():
        shutil.rmtree(out)


def build(data: Path, out: Path) -> dict:
    dataset = load_dataset(data)
    read = read_question_ids()
    quoted = {hit.qid for hit in quoted_questions(dataset.questions)}
    _clear(out)
    plans, kept, dropped = {}, [], Counter()
    for db_id in sorted({question.db_id for question in dataset.questions}):
        source = data / "database" / db_id / f"{db_id}.sqlite"
        target = out / "database" / db_id / f"{db_id}.sqlite"
        plans[db_id], renaming = build_database(source, target)
        for question in (x for x in dataset.questions if x.db_id == db_id):
            if question.qid in read or question.qid in quoted:
                dropped["read before" if question.qid in read else "quoted in a prompt"] += 1
                continue
            try:
                renamed = rename_sql(question.gold_sql, renaming)
            except RenameError:
                dropped["gold SQL sqlglot cannot read"] += 1
                continue
            before, after = run(source, question.gold_sql), run(target, renamed)
            if before is None:
                dropped["original gold SQL fails"] += 1
            elif after is None or not result_eq(before, after, order_matters(question.gold_sql)):
                dropped["renamed gold SQL returns other rows"] += 1
            else:
                kept.append({"question_id": question.qid, "db_id": db_id,
                             "question": question.question, "query": renamed,
                             "original_query": question.gold_sql,
                             "hardness": question.hardness})
    study, unread = split(kept)
    for name, items in (("dev.json", kept), ("study.json", study), ("unread.json", unread)):
        (out / name).write_text(json.dumps(items, indent=1), encoding="utf-8")
    summary = {"source": str(data), "kept": len(kept), "study": len(study),
               "unread": len(unread), "not kept": dict(dropped),
               "missing databases": dataset.missing_by_db(),
               "hardness (unread)": dict(Counter(i["hardness"] for i in unread)),
               "names": plans}
    (out / "summary.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "spider")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "runs" / "spider-renamed")
    args = parser.parse_args(argv)
    if not (args.data / "dev.json").is_file():
        print(f"no Spider dev set at {args.data} (give --data)", file=sys.stderr)
        return 2
    summary = build(args.data, args.out)
    print(json.dumps({k: v for k, v in summary.items() if k != "names"}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
