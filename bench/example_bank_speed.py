"""How fast the few-shot example bank is built and searched at 10,000 examples (no model).

``python bench/example_bank_speed.py [--examples 10000]`` fills an :class:`ExampleBank` with
generated question/SQL pairs over 50 databases (more than Spider's 7,000 training questions:
the size of a large accepted-answer store with them), then times nine searches (three
questions, each with no question type, JOIN and NESTED, one database excluded) and prints one
JSON object: the build seconds (adding every example and compiling the index) and the median
and slowest search. The targets it reports against, met or not: a median search under 50 ms, a
build under 20 s. Nothing is asserted: timing belongs here, on a machine whose load is written
down, not in a test.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agents.example_bank import JOIN, NESTED, ExampleBank  # noqa: E402

WORDS = ("singer song album stadium concert player team coach city country airport flight "
         "student course teacher department employee salary order product customer review "
         "book author loan member ship captain battle river mountain").split()
TEMPLATES = [
    "How many {a} are from {V}?", "What is the average {a} of all {b}?",
    "List the names of {a} that never had any {b}.", "Which {a} has the most {b}?",
    "Show the {a} and {b} of each {c} ordered by {a}.", "Find the {a} whose {b} is above {n}.",
    "What are the {a} of {b} with {c} named '{V}'?", "Return the {a} of the {b} with the "
    "lowest {c}.",
]
QUESTIONS = ("How many pilots are from Peru?", "Which captain has the most ships?",
             "List the names of members that never had any loan.")
TARGET_SEARCH_MS, TARGET_BUILD_S = 50, 20


def synthetic_bank(n: int, seed: int = 7) -> ExampleBank:
    """``n`` generated examples over 50 databases (``db0`` ... ``db49``), index compiled."""
    rng = random.Random(seed)
    bank = ExampleBank()
    for i in range(n):
        a, b, c = rng.sample(WORDS, 3)
        question = rng.choice(TEMPLATES).format(a=a, b=b, c=c, V=rng.choice(WORDS).title(),
                                               n=rng.randint(1, 999))
        sql = rng.choice([f"SELECT count(*) FROM {a} WHERE x{i} = 1",
                          f"SELECT T1.{a} FROM {a} AS T1 JOIN {b} AS T2 ON T1.id = T2.{a}_id "
                          f"WHERE T2.v = {i}",
                          f"SELECT {a} FROM {b} WHERE id NOT IN (SELECT id FROM {c}) AND k = {i}"])
        bank.add(question, sql, db_id=f"db{i % 50}")
    bank.search("warm up", k=1)  # compiles the index
    return bank


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=10_000)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    bank = synthetic_bank(args.examples)
    build = time.perf_counter() - started
    timings = []
    for question in QUESTIONS:
        for qtype in (None, JOIN, NESTED):
            t = time.perf_counter()
            bank.search(question, k=5, qtype=qtype, exclude_db="db3")
            timings.append(time.perf_counter() - t)
    median_ms = statistics.median(timings) * 1000
    print(json.dumps({
        "examples": len(bank), "build_seconds": round(build, 2),
        "search_ms_median": round(median_ms, 2), "search_ms_max": round(max(timings) * 1000, 2),
        "targets": {"search_ms_median": TARGET_SEARCH_MS, "build_seconds": TARGET_BUILD_S},
        "met": {"search": median_ms < TARGET_SEARCH_MS, "build": build < TARGET_BUILD_S},
        "cpu_count": os.cpu_count(), "load_average": list(os.getloadavg())}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
