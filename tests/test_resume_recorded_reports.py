"""The report of a resumed measurement (``agents/evaluation/resume_recorded.py``): only the
questions named, continued after a stop under the same settings, one row per record."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


def test_a_stopped_measurement_continues_with_its_rows_under_the_same_settings(tmp_path):
    """``--continue`` keeps an earlier report's rows and sittings only when it measured the
    same thing; a sitting left ``running`` by a killed measurement is said to have ended
    unrecorded."""
    from agents.evaluation.resume_recorded import earlier_report, summary
    from agents.evaluation.sittings import Sitting

    settings = {"results": "bench/results/seed8", "pipeline": "selection",
                "params": {"decomposer_prompt": "graded"}, "examples": "train.json",
                "records": 3, "machine": {}}
    out = tmp_path / "report.json"
    assert earlier_report(out, settings) == {"rows": [], "sittings": []}  # nothing yet
    row = {"question_id": 4, "before": True, "after": True, "resumed": False}
    sitting = Sitting(code="abc1234")
    sitting.count_result()
    out.write_text(json.dumps(summary([row], {**settings, "sittings": [sitting.so_far()]})))
    assert json.loads(out.read_text())["complete"] is False
    kept = earlier_report(out, settings)
    assert kept["rows"] == [row]
    assert [(s["code"], s["results"], s["ended_as"]) for s in kept["sittings"]] == [
        ("abc1234", 1, "ended unrecorded")]
    # the same files named another way are the same measurement
    assert earlier_report(out, {**settings, "results": str(Path.cwd() / "bench/results/seed8")})
    with pytest.raises(SystemExit, match="another params; write to a new --out"):
        earlier_report(out, {**settings, "params": {"decomposer_prompt": "paper"}})
    for text in ("{not json", "[1, 2]"):
        out.write_text(text)
        with pytest.raises(SystemExit, match="is not a (readable report|report of this)"):
            earlier_report(out, settings)


def test_a_measurement_stopped_and_continued_ends_with_one_row_per_record(tmp_path):
    """Interrupted after two runs, the report holds those two and says so; continued, only
    the rest are resumed and the report is complete, with both sittings."""
    from agents.evaluation.resume_recorded import earlier_report, measure

    records = [{"question_id": q} for q in (1, 2, 3, 4)]
    settings = {"results": "r", "pipeline": "p", "params": {}, "examples": None,
                "records": len(records), "machine": {}}
    out = tmp_path / "report.json"
    resumed: list[int] = []

    def resume_one(record, stop_at=None):
        if record["question_id"] == stop_at:
            raise KeyboardInterrupt
        resumed.append(record["question_id"])
        return {"question_id": record["question_id"], "before": False, "after": True,
                "resumed": True, "calls": 1, "seconds": 1.0}

    report, status = measure(records, lambda r: resume_one(r, stop_at=3), out, settings,
                             {"rows": [], "sittings": []})
    assert status == 130 and resumed == [1, 2]
    written = json.loads(out.read_text())
    assert written == report and not written["complete"]
    assert [r["question_id"] for r in written["rows"]] == [1, 2]
    assert [s["ended_as"] for s in written["sittings"]] == ["interrupted"]
    assert not list(tmp_path.glob("*.partial"))          # written whole, then swapped in

    report, status = measure(records, resume_one, out, settings, earlier_report(out, settings))
    assert status == 0 and resumed == [1, 2, 3, 4]
    assert [r["question_id"] for r in report["rows"]] == [1, 2, 3, 4] and report["complete"]
    assert report["ex_after"] == 4
    assert [(s["ended_as"], s["results"]) for s in report["sittings"]] == [
        ("interrupted", 2), ("done", 2)]


def test_a_few_named_questions_are_resumed_and_their_report_continues_only_as_such(tmp_path):
    """``--question`` measures a change known to touch a few questions: only their records
    are resumed, a mistyped id is refused rather than measuring nothing, and a report of some
    questions is not continued as one of others."""
    from agents.evaluation.resume_recorded import chosen_records, earlier_report, summary

    records = [{"question_id": q, "pipeline": p} for q in (1, 2, 3) for p in ("a", "b")]
    assert [r["question_id"] for r in chosen_records(records, "a", [])] == [1, 2, 3]
    assert chosen_records(records, "a", [3, 1]) == [{"question_id": 1, "pipeline": "a"},
                                                    {"question_id": 3, "pipeline": "a"}]
    with pytest.raises(SystemExit, match="no a record for question 7"):
        chosen_records(records, "a", [1, 7])
    settings = {"results": "r", "pipeline": "a", "params": {}, "examples": None, "records": 1,
                "machine": {}, "only": [1]}
    out = tmp_path / "report.json"
    out.write_text(json.dumps(summary([], {**settings, "sittings": []})))
    assert earlier_report(out, settings) == {"rows": [], "sittings": []}
    with pytest.raises(SystemExit, match="another only"):
        earlier_report(out, {**settings, "only": [3]})
