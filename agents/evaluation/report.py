"""Summaries of an evaluation: per-pipeline accuracy, cost and time, as JSON and Markdown.

The summary is computed from the results lines alone (plus descriptive metadata: machine,
model, settings, dataset), so the same numbers come out of the CLI, of a resumed evaluation and
of the Benchmark page reading an uploaded results file.
"""

from __future__ import annotations

import json
import math
import os
import platform
import sys
from pathlib import Path
from typing import Iterable

from .dataset import order_hardness
from .records import RESULTS_FILE, ResultsFile, utc_now
from .sittings import sittings_markdown

REPORT_JSON = "report.json"
REPORT_MD = "report.md"


def machine_info() -> dict:
    return {"platform": platform.platform(), "machine": platform.machine(),
            "processor": platform.processor() or platform.machine(),
            "cpu_count": os.cpu_count(), "python": sys.version.split()[0]}


def summarize(records: Iterable[dict]) -> dict:
    """Per-pipeline numbers: EX overall and by hardness, errors, tokens, calls and time."""
    by_pipeline: dict[str, list[dict]] = {}
    for r in records:
        by_pipeline.setdefault(r["pipeline"], []).append(r)
    return {name: _pipeline_summary(rows) for name, rows in by_pipeline.items()}


def _pipeline_summary(rows: list[dict]) -> dict:
    scored = [r for r in rows if not r.get("gold_error")]
    n = len(scored)
    correct = sum(1 for r in scored if r.get("correct"))
    levels: dict[str, list[int]] = {}
    for r in scored:
        level = levels.setdefault(r.get("hardness") or "unknown", [0, 0])
        level[0] += 1
        level[1] += 1 if r.get("correct") else 0
    by_hardness = {h: {"n": v[0], "correct": v[1], "ex": _pct(v[1], v[0])}
                   for h, v in order_hardness(levels).items()}
    metrics = [r.get("metrics") or {} for r in scored]
    seconds = [float(m.get("seconds") or 0.0) for m in metrics]
    drafts = [float(m["draft_seconds"]) for m in metrics if m.get("draft_seconds") is not None]
    llm_seconds = sum(float(m.get("llm_seconds") or 0.0) for m in metrics)
    refused = sum(1 for r in scored if r.get("answerable") is False)
    exec_errors = sum(1 for r in scored if r.get("pred_error") and not r.get("correct")
                      and r.get("answerable") is not False)
    return {
        # answered "the database cannot answer this" (its own outcome: neither SQL that
        # fails nor a result), and results the answer's review found doubtful
        "refused": refused,
        "doubtful": sum(1 for r in scored if r.get("doubtful")),
        "n": n,
        "correct": correct,
        "ex": _pct(correct, n),
        "by_hardness": by_hardness,
        "exec_errors": exec_errors,
        "exec_error_rate": _pct(exec_errors, n),
        "no_sql": sum(1 for r in scored if r.get("pred_error_class") == "NoSQL"),
        "failed_runs": sum(1 for r in scored if r.get("status") == "failed"),
        "truncated": sum(1 for r in scored if r.get("truncated")),
        "gold_errors": len(rows) - n,
        "llm_calls_per_q": _mean([m.get("llm_calls") or 0 for m in metrics]),
        "prompt_tokens_per_q": _mean([m.get("prompt_tokens") or 0 for m in metrics]),
        "completion_tokens_per_q": _mean([m.get("completion_tokens") or 0 for m in metrics]),
        "cached_calls": sum(int(m.get("cached_calls") or 0) for m in metrics),
        "seconds_p50": _percentile(seconds, 50),
        "seconds_p95": _percentile(seconds, 95),
        "seconds_total": round(sum(seconds), 2),
        # the time to a draft answer shown before the run ends (candidate selection)
        "draft_seconds_p50": _percentile(drafts, 50) if drafts else None,
        "draft_seconds_p95": _percentile(drafts, 95) if drafts else None,
        "drafts": len(drafts),
        "outside_model_share": (round(1 - llm_seconds / sum(seconds), 5)
                                if sum(seconds) > 0 else None),
    }


def build_report(records: list[dict], meta: dict | None = None) -> dict:
    """The whole report: the metadata as given (see :func:`run_metadata`) plus the summary."""
    report = dict(meta or {})
    report["questions_evaluated"] = len({r["question_id"] for r in records})
    report["pipelines"] = summarize(records)
    done: dict[str, set] = {}
    for r in records:
        done.setdefault(r["pipeline"], set()).add(r["question_id"])
    if len(done) > 1 and len({frozenset(q) for q in done.values()}) > 1:
        # Pipelines stopped at different points (a run completed over several sittings):
        # compare them fairly on the questions every one of them has answered.
        common = set.intersection(*done.values())
        report["common"] = {"questions": len(common), "pipelines": summarize(
            r for r in records if r["question_id"] in common)}
    return report


def run_metadata(**fields) -> dict:
    """Report metadata for an evaluation finishing now on this machine, plus ``fields``."""
    return {"created": utc_now(), "machine": machine_info(), **fields}


def write_report(out_dir: str | Path, meta: dict | None = None) -> dict:
    """Summarize ``out_dir/results.jsonl`` into ``report.json`` and ``report.md``."""
    out = Path(out_dir)
    records = ResultsFile(out / RESULTS_FILE).read()
    report = build_report(records, meta)
    out.mkdir(parents=True, exist_ok=True)
    (out / REPORT_JSON).write_text(json.dumps(report, indent=2, ensure_ascii=False),
                                   encoding="utf-8")
    (out / REPORT_MD).write_text(render_markdown(report), encoding="utf-8")
    return report


def read_report(folder: str | Path) -> dict | None:
    """The ``report.json`` of an evaluation output folder, or None when absent or unreadable."""
    path = Path(folder) / REPORT_JSON
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, OSError):
        return None


def render_markdown(report: dict) -> str:
    pipelines: dict[str, dict] = report.get("pipelines") or {}
    dataset = report.get("dataset") or {}
    sample = report.get("sample") or {}
    machine = report.get("machine") or {}
    lines = [f"# Evaluation report: {dataset.get('name') or 'dataset'}", ""]
    if report.get("created"):
        lines.append(f"- Date: {report['created']}")
    if report.get("model"):
        lines.append(f"- Model: {report['model']}")
    if machine:
        lines.append(f"- Machine: {machine.get('platform')}, {machine.get('cpu_count')} CPUs, "
                     f"Python {machine.get('python')}")
    if dataset:
        missing = dataset.get("missing_by_db") or {}
        skipped = sum(missing.values())
        where = ", ".join(f"{db}: {n}" for db, n in missing.items()) or "none"
        lines.append(f"- Dataset: {dataset.get('root')} -- {dataset.get('total')} questions, "
                     f"{skipped} skipped because their database is missing ({where}), "
                     f"{dataset.get('executable')} executable")
    if sample:
        limit = sample.get("limit")
        lines.append(f"- Sample: {sample.get('size')} questions ({sample.get('mode')}, "
                     f"seed {sample.get('seed')}, limit {limit if limit is not None else 'none'})")
    lines.append(f"- Questions with results: {report.get('questions_evaluated', 0)}")
    lines.append("")

    lines += _tables(pipelines)
    common = report.get("common")
    if common:
        lines += ["", f"## Side by side on the {common['questions']} questions every pipeline "
                  "has answered", "",
                  "The tables above count each pipeline's own finished questions; these count "
                  "only the questions all of them finished, so they compare like with like.", ""]
        lines += _tables(common["pipelines"], level=3)
    settings = report.get("settings") or {}
    if settings:
        lines += ["", "## Settings", ""]
        lines += [f"- {key}: {value}" for key, value in settings.items()]
    lines += sittings_markdown(report.get("sittings") or [])
    notes = list(report.get("notes") or [])
    for name, s in pipelines.items():
        if s.get("gold_errors"):
            notes.append(f"{name}: {s['gold_errors']} questions not scored because the gold "
                         "query failed")
        if s.get("cached_calls"):
            notes.append(f"{name}: {s['cached_calls']} model calls were answered from the "
                         "response cache, so time and tokens understate a fresh run")
    if notes:
        lines += ["", "## Notes", ""] + [f"- {n}" for n in notes]
    return "\n".join(lines) + "\n"


def _tables(pipelines: dict[str, dict], level: int = 2) -> list[str]:
    """The accuracy table and the cost table of ``pipelines``' summaries."""
    mark = "#" * level
    lines: list[str] = []
    levels: list[str] = []
    for s in pipelines.values():
        levels += [h for h in s["by_hardness"] if h not in levels]
    levels = list(order_hardness({h: 0 for h in levels}))
    lines += [f"{mark} Execution accuracy (EX, %)", ""]
    head = ["pipeline", "n", "EX"] + levels + ["exec errors %", "failed runs", "truncated"]
    lines += [_row(head), _row(["---"] * len(head))]
    for name, s in pipelines.items():
        cells = [name, s["n"], _fmt(s["ex"])]
        for h in levels:
            level = s["by_hardness"].get(h)
            cells.append(f"{_fmt(level['ex'])} ({level['correct']}/{level['n']})" if level else "")
        cells += [_fmt(s["exec_error_rate"]), s["failed_runs"], s["truncated"]]
        lines.append(_row(cells))
    lines += ["", "Exec errors: the pipeline gave no SQL or its SQL failed to run. Failed runs: a "
              "step failed (its SQL, if any, is still scored).", ""]
    refusals = [f"{name} {s['refused']} of {s['n']}" for name, s in pipelines.items()
                if s.get("refused")]
    if refusals:
        lines += ["Answered that the database cannot answer the question (scored as wrong, not "
                  "as exec errors): " + ", ".join(refusals) + ".", ""]
    lines += [f"{mark} Cost and time per question", ""]
    head = ["pipeline", "LLM calls", "prompt tokens", "completion tokens", "seconds p50",
            "seconds p95", "time outside the model"]
    lines += [_row(head), _row(["---"] * len(head))]
    for name, s in pipelines.items():
        share = s["outside_model_share"]
        lines.append(_row([name, _fmt(s["llm_calls_per_q"]), _fmt(s["prompt_tokens_per_q"], 0),
                           _fmt(s["completion_tokens_per_q"], 0), _fmt(s["seconds_p50"]),
                           _fmt(s["seconds_p95"]),
                           f"{share * 100:.2f}%" if share is not None else ""]))
    drafted = {n: s for n, s in pipelines.items() if s.get("drafts")}
    if drafted:
        lines += ["", "Draft answers (shown before the run ends): seconds from the question.", "",
                  _row(["pipeline", "questions with a draft", "draft p50", "draft p95"]),
                  _row(["---"] * 4)]
        lines += [_row([n, s["drafts"], _fmt(s["draft_seconds_p50"]),
                        _fmt(s["draft_seconds_p95"])]) for n, s in drafted.items()]
    return lines


def _row(cells: list) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def _fmt(value, digits: int = 1) -> str:
    return "" if value is None else f"{value:.{digits}f}"


def _pct(part: int, whole: int) -> float | None:
    return round(100.0 * part / whole, 2) if whole else None


def _mean(values: list) -> float | None:
    return round(sum(values) / len(values), 2) if values else None


def _percentile(values: list[float], q: float) -> float | None:
    """Linear-interpolation percentile (numpy's default), None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100
    low, high = math.floor(pos), math.ceil(pos)
    value = ordered[low] + (ordered[high] - ordered[low]) * (pos - low)
    return round(value, 3)

