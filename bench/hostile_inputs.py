"""Hostile inputs against the hard limits, at scale, and the cost of the worker per query.

``python bench/hostile_inputs.py run [--limit 10] [--count N]`` runs the generated statements of
``tests/test_hostile_statements.py`` (all of them unless ``--count``) against the shop database
opened from a file and from uploaded bytes, under the app's default time limit, then opens each
generated file of ``tests/test_hostile_files.py`` both ways. It prints one JSON object:
statements tried, refused, ran, failed, stopped at the limit, the slowest statement against the
limit, the slowest open and schema read against their budgets, problems found (the suite's
checks), and the peak memory of the app's process and of any worker (``getrusage``; workers are
reaped when the template stops).

``python bench/hostile_inputs.py overhead`` measures the median time of three tiny queries, the
kind pipelines run by the hundred, on a file and on an upload. Run it with ``PYTHONPATH``
pointing at another checkout to compare (the repository is appended to ``sys.path``, so an
earlier entry wins).

Nothing is asserted: it is a measurement (the suite asserts).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.append(str(ROOT))
sys.path.append(str(ROOT / "tests"))

TINY = ["SELECT 1", "SELECT count(*) FROM orders",
        "SELECT name, price FROM products ORDER BY price DESC LIMIT 5"]


def _machine() -> str:
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2 ** 30
    return (f"{platform.machine()}, {os.cpu_count()} cores, {memory:.0f} GiB, "
            f"Python {platform.python_version()}, load average {os.getloadavg()[0]:.1f} at end")


def overhead(repeat: int) -> dict:
    from agents.db.database import Database, open_database

    shop = ROOT / "sample_dbs" / "shop.sqlite"
    out = {}
    for how, db in (("file", open_database(shop)),
                    ("upload", Database.from_bytes("shop.sqlite", shop.read_bytes()))):
        for sql in TINY:
            db.execute(sql)
            times = []
            for _ in range(repeat):
                started = time.perf_counter()
                db.execute(sql)
                times.append(time.perf_counter() - started)
            out[f"{how}: {sql}"] = round(statistics.median(times) * 1e6)
        db.close()
    return {"median_microseconds": out, "repeat": repeat, "machine": _machine()}


def run(limit: float, count: int | None) -> dict:
    import test_hostile_files as files_suite
    import test_hostile_statements as suite
    from hostile_checks import clear_message
    from agents.db import zygote
    from agents.db.database import Database, open_database
    from dbfactory import SHOP_SQL, db_bytes

    statements = suite.hostile_statements(count=count)
    report: dict = {"limit_s": limit, "statements": len(statements), "sources": {}}
    problems: list[str] = []
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "shop.sqlite"
        path.write_bytes(db_bytes(SHOP_SQL))
        for how, opener in (("file", lambda: open_database(path)),
                            ("upload", lambda: Database.from_bytes("shop.sqlite",
                                                                   path.read_bytes()))):
            started = time.perf_counter()
            with opener() as db:
                stats = suite.run_statements(db, statements, Path(folder), limit=limit)
            problems += stats.pop("problems")
            stats["max_seconds"] = round(stats["max_seconds"], 2)
            stats["wall_s"] = round(time.perf_counter() - started, 1)
            report["sources"][how] = stats
        files = files_suite.hostile_files()
        slowest = {"open_s": 0.0, "schema_s": 0.0}
        outcomes = {"opened": 0, "refused": 0}
        for index, (name, data, wal, _expected) in enumerate(files):
            target = Path(folder) / f"f{index}"
            target.mkdir()
            for outcome in files_suite.open_both_ways(name, data, wal, target):
                outcomes["opened" if outcome["opened"] else "refused"] += 1
                slowest["open_s"] = max(slowest["open_s"], outcome["open_seconds"])
                slowest["schema_s"] = max(slowest["schema_s"], outcome.get("schema_seconds", 0))
                if outcome["opened"]:
                    outcome["db"].close()
                elif not clear_message(outcome["message"]):
                    problems.append(f"{name}: {outcome['message']!r:.200}")
        report["files"] = {"files": len(files), **outcomes,
                           **{k: round(v, 2) for k, v in slowest.items()}}
    zygote.shutdown()  # reaps every worker, so RUSAGE_CHILDREN covers them
    report["problems"] = problems
    kib = 1024
    report["peak_rss_mib"] = {
        "app_process": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / kib),
        "largest_worker": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / kib)}
    report["machine"] = _machine()
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run_parser = sub.add_parser("run")
    run_parser.add_argument("--limit", type=float, default=10.0)
    run_parser.add_argument("--count", type=int, default=None)
    over = sub.add_parser("overhead")
    over.add_argument("--repeat", type=int, default=2000)
    args = parser.parse_args()
    if args.command == "run":
        print(json.dumps(run(args.limit, args.count), indent=2))
    else:
        print(json.dumps(overhead(args.repeat), indent=2))


if __name__ == "__main__":
    main()
