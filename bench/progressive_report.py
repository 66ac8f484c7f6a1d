"""Write ``bench/results/progressive.json`` from the evaluations that measured the speed-ups.

Each sample is one pair of fresh ``selection`` evaluations on the same questions: today's
defaults (``--out <folder>``) and the same with ``draft_first`` and ``stop_when_decided`` off
(``<folder>-off``). The MAC-SQL median comes from a ``macsql`` evaluation and the cold start
from ``bench/cold_start.py`` outputs. No model is called here; every figure is read from the
folders, so the file can be rebuilt at any time::

    python bench/progressive_report.py --sample "seed 12=bench/results/progressive-seed12-selection" \\
        --sample "seed 13=bench/results/progressive-seed13-selection" \\
        --macsql bench/results/progressive-seed12-macsql \\
        --cold bench/results/cold-start-selection.json --note "..."
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _report(folder: Path, pipeline: str) -> dict:
    return json.loads((folder / "report.json").read_text(encoding="utf-8"))["pipelines"][pipeline]


def _commit(folder: Path) -> str | None:
    """The code commit of the folder's (last) sitting."""
    path = folder / "sittings.jsonl"
    if not path.exists():
        return None
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    return (lines[-1].get("commit") or lines[-1].get("code")) if lines else None


def _final_sql(folder: Path) -> dict:
    rows = [json.loads(line) for line in
            (folder / "results.jsonl").read_text(encoding="utf-8").splitlines() if line]
    return {row["question_id"]: row.get("pred_sql") for row in rows}


def sample_entry(name: str, folder: Path) -> dict:
    """One sample: the speed-ups on (``folder``) against off (``folder``-off), same questions."""
    on = _report(folder, "selection")
    off = _report(folder.with_name(folder.name + "-off"), "selection")
    if on["n"] != off["n"]:
        raise SystemExit(f"{folder}: {on['n']} questions with the speed-ups, {off['n']} without")
    sql_on, sql_off = _final_sql(folder), _final_sql(folder.with_name(folder.name + "-off"))
    return {
        "name": name, "n": on["n"],
        "draft_p50_s": on.get("draft_seconds_p50"), "draft_p95_s": on.get("draft_seconds_p95"),
        "final_p50_s": on["seconds_p50"], "final_p95_s": on["seconds_p95"],
        "ex_before": off["ex"], "ex_after": on["ex"],
        "final_before_p50_s": off["seconds_p50"], "final_before_p95_s": off["seconds_p95"],
        "draft_before_p50_s": off.get("draft_seconds_p50"),
        "calls_before": off["llm_calls_per_q"], "calls_after": on["llm_calls_per_q"],
        "prompt_tokens_before": round(off["prompt_tokens_per_q"]),
        "prompt_tokens_after": round(on["prompt_tokens_per_q"]),
        "exec_error_pct_after": on["exec_error_rate"],
        "same_final_sql": sum(sql_on[q] == sql_off.get(q) for q in sql_on),
        "results": str(folder.relative_to(ROOT)) if folder.is_relative_to(ROOT) else str(folder),
        "commit": _commit(folder),
    }


def _read_ahead(path: Path) -> dict:
    """A cold start with the prompt prefix read first: what was read, then the wait after the
    question."""
    cold = json.loads(path.read_text(encoding="utf-8"))
    keys = ("pipeline", "database", "prefix_tokens", "prefix_read_s",
            "draft_answer_after_question_s", "run_finished_after_question_s", "commit")
    return {key: cold.get(key) for key in keys if key in cold}


def _targets(samples: list[dict], macsql: float | None, first: float | None) -> dict:
    """Each target of the benchmark, and whether every sample met it (None: not measured)."""
    def every(check):
        return all(check(s) for s in samples) if samples else None
    return {
        "draft_p50_at_most_5_s": every(lambda s: s["draft_p50_s"] <= 5),
        "final_p50_at_most_20_s": every(lambda s: s["final_p50_s"] <= 20),
        "ex_at_most_1_point_below": every(lambda s: s["ex_after"] >= s["ex_before"] - 1),
        "macsql_p50_at_most_12_s": None if macsql is None else macsql <= 12,
        "cold_first_answer_at_most_30_s": None if first is None else first <= 30,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", action="append", default=[], metavar="NAME=FOLDER",
                        help="a sample's name and its folder with today's defaults")
    parser.add_argument("--macsql", type=Path, help="a macsql evaluation folder")
    parser.add_argument("--cold", type=Path, help="bench/cold_start.py output for selection")
    parser.add_argument("--cold-warm", type=Path, action="append", default=[],
                        help="bench/cold_start.py --warm output (repeatable)")
    parser.add_argument("--note", default="", help="what else ran on the machine")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "progressive.json")
    args = parser.parse_args()
    samples = []
    for text in args.sample:
        name, _, folder = text.partition("=")
        samples.append(sample_entry(name, Path(folder).resolve()))
    cold = json.loads(args.cold.read_text(encoding="utf-8")) if args.cold else {}
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, text=True,
                            capture_output=True).stdout.strip()
    macsql = _report(args.macsql, "macsql")["seconds_p50"] if args.macsql else None
    first = cold.get("draft_answer_s", cold.get("run_finished_s"))
    report = {
        "samples": samples,
        "macsql_p50_s": macsql,
        "cold_first_answer_s": first,
        "cold_whole_answer_s": cold.get("run_finished_s"),
        "read_ahead": [_read_ahead(path) for path in args.cold_warm],
        "targets": _targets(samples, macsql, first),
        "machine": f"{platform.platform()}, {platform.machine()}, 2 CPUs, embedded "
                   "qwen2.5-coder-1.5b-instruct q4_k_m, temperature 0, cache off",
        "commit": commit, "date": str(date.today()), "note": args.note,
    }
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    sys.exit(main())
