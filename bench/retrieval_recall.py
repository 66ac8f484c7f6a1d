"""How well schema retrieval keeps what a question needs, measured without the model.

``python bench/retrieval_recall.py --db bench/merged/spider_dev_distractors.sqlite --seed 7
[--floors 0.3,0.4] [--neighbour-share 0]``

For every question of a Spider dev sample (the evaluation's own stratified draw; ``--seed 8``
draws the disjoint sample: it leaves out the seed-7 sample and the questions pipeline prompts
quote, as ``agents eval --exclude-sample 7:100 --exclude-quoted`` does), the Schema Retriever's
ranking and fit run as they do in a pipeline (value grounding included) against a merged
database built by ``bench/merge_spider.py``, once per relative floor (the share of the best
table's score under which a table is left out, :data:`agents.retrieval.stage.RELATIVE_FLOOR`),
with the share of its best foreign-key neighbour's score each table gains (``--neighbour-share``,
0 for none: :data:`agents.retrieval.ranking.NEIGHBOUR_SHARE`) and the share of the best score
the best table of a table's part of the schema must reach for it to stay (``--part-floor``, 0
for no such rule: :data:`agents.retrieval.stage.PART_FLOOR`) and the share of the question's
words the best-covering part covers that a part must cover (``--part-coverage``, 0 for none:
:data:`agents.retrieval.stage.PART_COVERAGE`). It reports how many questions
keep every table their gold query reads (under its merged name), the schema tokens kept
(median, p90, max) within ``baseline``'s budget, the tables kept (median) and how many of them,
on average, come from another database than the question's (look-alikes the model may take
for the right one).

With ``--grounding`` it also reports, at the adopted floor, what value grounding shows the
writers of ``selection`` (whose ``ground`` step runs after retrieval): the question's phrases
looked up in the columns retrieval kept, as the pipeline does, and for comparison in the whole
database -- matches, questions with any, matches in a column the writers cannot see, and how
many of the gold queries' string literals (``'France'``) are among the matches they can see.

With ``--whole-part`` it also reports, at the adopted floors, what ``keep_whole_part``
(:mod:`agents.retrieval.whole_part`) does per margin (the share of the best score a kept table
of another part may reach for the best table's part to be completed, ``--margins``; the
adopted one is :data:`~agents.retrieval.whole_part.WHOLE_PART_MARGIN`, over 1 for no such rule):
how many questions get their best part completed and written first, for how many of those the
best-ranked table lies in another database than the question's (a look-alike written first),
and the tables and tokens kept.

Retrieval is deterministic, so this is what retrieval itself costs or saves, apart from the model.
Nothing is asserted: it is a measurement.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import sqlglot  # noqa: E402
from sqlglot import exp  # noqa: E402

from agents.db.database import open_database
from agents.evaluation.dataset import load_dataset, sample_questions  # noqa: E402
from agents.evaluation.prompt_overlap import quoted_questions  # noqa: E402
from agents.pipelines import get_pipeline  # noqa: E402
from agents.retrieval.fit import fit, form_cost  # noqa: E402
from agents.retrieval.parts import schema_parts  # noqa: E402
from agents.retrieval.ranking import NEIGHBOUR_SHARE, rank  # noqa: E402
from agents.retrieval.stage import (GROUNDING, PART_COVERAGE, PART_FLOOR,  # noqa: E402
                                    QUESTION_COPIES, RELATIVE_FLOOR, over_floor)
from agents.llm.token_budget import DEFAULT_ANSWER, DEFAULT_CONTEXT, estimate_tokens
from agents.retrieval.whole_part import WHOLE_PART_MARGIN, whole_part  # noqa: E402
from agents.retrieval.value_grounding import ground_question


def sample(data: Path, seed: int, limit: int) -> list:
    questions = [q for q in load_dataset(data).questions if q.db_path]
    if seed == 7:
        return sample_questions(questions, limit=limit, mode="stratified", seed=7)
    first = sample_questions(questions, limit=limit, mode="stratified", seed=7)
    exclude = {q.qid for q in first} | {q.qid for q in quoted_questions(questions)}
    return sample_questions(questions, limit=limit, mode="stratified", seed=seed,
                            exclude=exclude)


def own_tables(data: Path, db_id: str) -> set[str]:
    """The names a database's tables may have in a merged file (as they are, or prefixed with
    the database id where names collided), lower case."""
    import sqlite3
    path = data / "database" / db_id / f"{db_id}.sqlite"
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        names = [r[0] for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")]
    return {n.lower() for name in names for n in (name, f"{db_id}_{name}")}


def gold_tables(sql: str) -> set[str]:
    return {t.name.lower() for t in sqlglot.parse_one(sql, read="sqlite").find_all(exp.Table)}


def gold_literals(sql: str) -> set[str]:
    return {lit.this.casefold() for lit in sqlglot.parse_one(sql, read="sqlite").find_all(
        exp.Literal) if lit.is_string}


def grounding_report(db, asked: list[tuple]) -> dict:
    """What value grounding finds for each (question, kept schema), searching the kept tables'
    kept columns (``selection``'s ``ground`` step) and, for comparison, the whole database."""
    report = {}
    for where in ("kept tables", "whole database"):
        matches = questions = outside = literals = found = 0
        for q, kept in asked:
            shown = {(t.name.casefold(), c.casefold()) for t in kept.tables
                     for c in t.column_names()}
            tables = {t.name: t.column_names() for t in kept.tables} \
                if where == "kept tables" else None
            grounding = ground_question(db, q.question, tables=tables)
            in_kept = [m for m in grounding.matches
                       if (m.table.casefold(), m.column.casefold()) in shown]
            matches += len(grounding.matches)
            questions += bool(grounding.matches)
            outside += len(grounding.matches) - len(in_kept)
            wanted = gold_literals(q.gold_sql)
            literals += len(wanted)
            found += len(wanted & {m.value.casefold() for m in in_kept})
        report[where] = {"matches": matches, "questions_with_a_match": questions,
                         "matches_the_writers_cannot_see": outside, "gold_literals": literals,
                         "gold_literals_found_where_the_writers_see": found}
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", required=True, help="a database built by bench/merge_spider.py")
    parser.add_argument("--data", default="../shared/data/spider")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--limit", type=int, default=100)
    parser.add_argument("--floors", default=f"0.3,{RELATIVE_FLOOR}",
                        help=f"relative floors to compare (the adopted one: {RELATIVE_FLOOR})")
    parser.add_argument("--neighbour-share", type=float, default=NEIGHBOUR_SHARE,
                        help="share of its best foreign-key neighbour's score a table gains "
                             f"(the adopted one: {NEIGHBOUR_SHARE}; 0: none)")
    parser.add_argument("--part-floor", type=float, default=PART_FLOOR,
                        help="share of the best score a table's part of the schema must reach "
                             f"(the adopted one: {PART_FLOOR}; 0: no such rule)")
    parser.add_argument("--part-coverage", type=float, default=PART_COVERAGE,
                        help="share of the question's words the best-covering part covers that "
                             "a part must cover (the adopted one: "
                             f"{PART_COVERAGE}; 0: no such rule)")
    parser.add_argument("--pipeline", default="baseline")
    parser.add_argument("--grounding", action="store_true",
                        help="also report what value grounding shows the writers (at the "
                             "adopted floor)")
    parser.add_argument("--whole-part", action="store_true",
                        help="also report what keep_whole_part does, per --margins")
    parser.add_argument("--margins", default=f"1.01,0.8,{WHOLE_PART_MARGIN},0.6",
                        help="margins for --whole-part (over 1: no rival part holds it back)")
    args = parser.parse_args(argv)
    db = open_database(args.db)
    pipeline = get_pipeline(args.pipeline)
    params = {p.name: p.default for p in pipeline.params}
    cost = form_cost(pipeline.retrieval.forms(params))
    started = time.perf_counter()
    ranked = []
    for q in sample(Path(args.data), args.seed, args.limit):
        grounding = ground_question(db, q.question, GROUNDING)
        budget = (DEFAULT_CONTEXT - DEFAULT_ANSWER - pipeline.retrieval.reserve_for(params)
                  - QUESTION_COPIES * estimate_tokens(q.question))
        ranked.append((q, rank(db.schema, q.question, "", grounding.matches,
                                  neighbour_share=args.neighbour_share), budget))
    parts = schema_parts(db.schema)
    report = {"db": args.db, "seed": args.seed, "questions": len(ranked),
              "pipeline": args.pipeline, "neighbour_share": args.neighbour_share,
              "part_floor": args.part_floor, "part_coverage": args.part_coverage,
              "ranking_seconds": round(time.perf_counter() - started, 1),
              "floors": {}}
    for floor in (float(f) for f in args.floors.split(",")):
        tokens, kept_all, tables, others = [], 0, [], []
        for q, ranking, budget in ranked:
            order = over_floor(ranking, floor, parts, args.part_floor, args.part_coverage)
            result = fit(db.schema, order or list(ranking.order), ranking.columns, cost, budget)
            tokens.append(result.tokens)
            kept = {name.lower() for name in result.selection}
            tables.append(len(kept))
            others.append(len(kept - own_tables(Path(args.data), q.db_id)))
            kept_all += all(t in kept or f"{q.db_id}_{t}".lower() in kept
                            for t in gold_tables(q.gold_sql))
        tokens.sort()
        report["floors"][str(floor)] = {
            "every_gold_table_kept": kept_all, "tokens_p50": statistics.median(tokens),
            "tokens_p90": tokens[int(0.9 * (len(tokens) - 1))], "tokens_max": tokens[-1],
            "tables_p50": statistics.median(tables),
            "other_database_tables_mean": round(statistics.mean(others), 1)}
    adopted = []            # each question's fit at the adopted floor, for the reports below
    if args.grounding or args.whole_part:
        for q, ranking, budget in ranked:
            order = over_floor(ranking, RELATIVE_FLOOR, parts, args.part_floor,
                               args.part_coverage)
            adopted.append((q, ranking, budget, fit(db.schema, order or list(ranking.order),
                                                    ranking.columns, cost, budget)))
    if args.grounding:
        report["grounding"] = grounding_report(
            db, [(q, db.schema.subset(result.selection)) for q, _, _, result in adopted])
    if args.whole_part:
        report["whole_part"] = whole_part_report(db, adopted, parts, cost, args,
                                                 [float(m) for m in args.margins.split(",")])
    print(json.dumps(report, indent=1))
    return 0


def whole_part_report(db, fitted: list, parts, cost, args, margins: list[float]) -> dict:
    """Per margin: questions whose best part is completed, of them those whose best-ranked
    table is of another database, and the tables and tokens kept then (``fitted``: each
    question, its ranking, budget and fit at the adopted floor)."""
    data = Path(args.data)
    report = {}
    for margin in margins:
        completed = elsewhere = 0
        tables, tokens = [], []
        for q, ranking, budget, result in fitted:
            done, first = whole_part(db.schema, parts, result, ranking.order, ranking.scores,
                                     cost, budget, margin=margin)
            tables.append(len(done.selection))
            tokens.append(done.tokens)
            if first:
                completed += 1
                best = next(n for n in ranking.order if n in result.selection)
                elsewhere += best.lower() not in own_tables(data, q.db_id)
        report[str(margin)] = {"completed": completed, "best_table_of_another_database":
                               elsewhere, "tables_p50": statistics.median(tables),
                               "tokens_p50": statistics.median(tokens)}
    return report


if __name__ == "__main__":
    raise SystemExit(main())
