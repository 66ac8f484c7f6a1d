"""Which questions the pipelines of one evaluation get right, compared question by question.

``python bench/agreement.py RESULTS_DIR DATA_DIR`` reads ``RESULTS_DIR/results.jsonl`` (written by
``python -m agents eval``) and prints one JSON object:

- ``union``: questions answered correctly by at least one pipeline;
- ``against_baseline``: for each pipeline, the questions it gets right that ``baseline`` misses
  and the other way round (the EX difference alone hides how much the two disagree);
- ``r3_first_draft``: R³'s SQL-Writer's first draft (the SQL of its ``write`` step, before any
  execution feedback or review) scored against the gold query with the evaluation's own scoring,
  and how many answers the later rounds fixed and broke. The draft is re-executed on
  ``DATA_DIR/database/<db_id>/<db_id>.sqlite``, read-only.

Only questions every pipeline answered are compared. Nothing is asserted: it is a measurement.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agents.evaluation.harness import DatabasePool, EvalOptions, score  # noqa: E402
from agents.evaluation.records import ResultsFile  # noqa: E402


def first_draft(record: dict) -> str | None:
    """The SQL of the run's first ``write`` step (R³'s SQL-Writer), or None."""
    for event in (record.get("run") or {}).get("events", []):
        if event.get("step") == "write":
            return event.get("sql")
    return None


def main(results_dir: str, data_dir: str) -> dict:
    records = ResultsFile(Path(results_dir) / "results.jsonl").read()
    by_pipeline: dict[str, dict[int, dict]] = {}
    for record in records:
        by_pipeline.setdefault(record["pipeline"], {})[record["question_id"]] = record
    common = set.intersection(*(set(answers) for answers in by_pipeline.values()))
    correct = {name: {q for q in common if answers[q]["correct"]}
               for name, answers in by_pipeline.items()}
    report: dict = {"questions": len(common),
                    "union": len(set().union(*correct.values()))}
    if "baseline" in correct:
        base = correct["baseline"]
        report["against_baseline"] = {
            name: {"right_where_baseline_wrong": len(right - base),
                   "wrong_where_baseline_right": len(base - right)}
            for name, right in correct.items() if name != "baseline"}
    if "r3" in by_pipeline:
        pool, options = DatabasePool(), EvalOptions()
        draft_right: set[int] = set()
        differs = 0
        for q in common:
            record = by_pipeline["r3"][q]
            draft = first_draft(record)
            db = pool.get(str(Path(data_dir) / "database" / record["db_id"]
                              / f"{record['db_id']}.sqlite"))
            if score(db, record["gold_sql"], draft, options)["correct"]:
                draft_right.add(q)
            differs += (draft or "").strip() != (record["pred_sql"] or "").strip()
        report["r3_first_draft"] = {
            "draft_correct": len(draft_right), "final_correct": len(correct["r3"]),
            "final_differs_from_draft": differs,
            "fixed_by_later_rounds": len(correct["r3"] - draft_right),
            "broken_by_later_rounds": len(draft_right - correct["r3"])}
    return report


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    print(json.dumps(main(sys.argv[1], sys.argv[2]), indent=1))
