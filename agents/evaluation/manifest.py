"""The manifest of an evaluation folder: what was evaluated there (dataset, sample, model,
scoring, few-shot file, each pipeline's parameters), checked when the folder is reused so a
resumed evaluation never mixes answers from different models or scoring rules."""

from __future__ import annotations

import json
from pathlib import Path

from agents.cli.options import UsageError
from ..pipelines import get_pipeline
from .records import RESULTS_FILE, ResultsFile

MANIFEST = "manifest.json"
# Manifest keys that must match for a folder to be resumed: anything else makes the old and new
# lines incomparable. ``examples`` is the few-shot file (resolved path, or None); ``params`` holds
# each pipeline's non-default parameters and is compared only for pipelines evaluated there
# before and again now, so one folder can still gather pipelines evaluated one at a time.
RESUME_KEYS = ("dataset", "sample_mode", "seed", "keep_distinct", "model", "error_hints",
               "examples", "params", "exclude_samples", "exclude_quoted", "excluded_ids",
               "ask_db", "answer_checks")
# What a manifest written before a key existed meant by leaving it out.
RESUME_DEFAULTS = {"exclude_samples": [], "exclude_quoted": False, "excluded_ids": [],
                   "ask_db": None,
                   # evaluated before the answerability check existed: it never ran
                   "answer_checks": False}


def check_manifest(out: Path, manifest: dict) -> None:
    """Refuse to resume into a folder evaluated with another model, dataset, scoring, example
    file or pipeline parameters; then record ``manifest`` (keeping the parameters of pipelines
    evaluated there before)."""
    manifest = json.loads(json.dumps(manifest))  # compared with what a JSON file gives back
    path = out / MANIFEST
    old: dict = {}
    if path.is_file():
        try:
            old = json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, OSError):
            old = {}
        if not isinstance(old, dict):
            old = {}
        if old and "params" not in old:
            old["params"] = _params_of_the_time(out)
        changed = {}
        for key in RESUME_KEYS:
            if key not in old and key not in RESUME_DEFAULTS:  # written before it was recorded
                continue
            before = old.get(key, RESUME_DEFAULTS.get(key))
            now = manifest.get(key, RESUME_DEFAULTS.get(key))
            if key == "params":  # only pipelines evaluated there before and again now
                before = {p: v for p, v in (before or {}).items() if p in now}
                before, now = _param_differences(before, {p: now[p] for p in before})
            if before != now:
                changed[key] = (before, now)
        if changed:
            details = "; ".join(f"{k}: {_short(before)} there, {_short(now)} now"
                                for k, (before, now) in changed.items())
            raise UsageError(f"{out} holds an evaluation with other settings ({details}); "
                              "use another --out folder")
    if isinstance(old.get("params"), dict):
        manifest["params"] = {**old["params"], **manifest["params"]}
    out.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(manifest, indent=2), encoding="utf-8")


def _params_of_the_time(out: Path) -> dict[str, dict]:
    """What a manifest written before parameters were recorded meant: every pipeline with
    results in the folder ran with its defaults of that time (``{}``, which
    :meth:`~agents.core.engine.Pipeline.resolve_recorded` reads with its ``replay_defaults()``)."""
    return {r["pipeline"]: {} for r in ResultsFile(out / RESULTS_FILE).read() if "pipeline" in r}


def recorded_params(params: dict[str, dict], pipelines) -> dict[str, dict]:
    """Per evaluated pipeline, the parameters ``--param`` set away from their defaults, and
    every parameter whose default has changed (``Pipeline.replay_defaults()``) written out, so a
    manifest read after a later change still says what ran."""
    result = {}
    for pipeline in pipelines:
        defaults = pipeline.resolve_params(None)
        values = pipeline.resolve_params(params.get(pipeline.name, {}))
        result[pipeline.name] = {k: v for k, v in values.items()
                                 if defaults.get(k) != v or k in pipeline.replay_defaults()}
    return result


def _param_differences(before: dict[str, dict], now: dict[str, dict]) -> tuple[dict, dict]:
    """The parameters that differ between a manifest's pipelines and this run's, per pipeline,
    compared as the values they stand for: a parameter a manifest leaves out ran at its default
    of the time (:meth:`~agents.core.engine.Pipeline.resolve_recorded`)."""
    there, here = {}, {}
    for name in before:
        try:
            pipeline = get_pipeline(name)
            old = pipeline.resolve_recorded(before[name])
            new = pipeline.resolve_params(now[name])
        except (KeyError, ValueError):  # a pipeline or parameter that no longer exists
            old, new = before[name], now[name]
        keys = [k for k in dict.fromkeys([*old, *new]) if old.get(k) != new.get(k)]
        if keys:
            there[name] = {k: old[k] for k in keys if k in old}
            here[name] = {k: new[k] for k in keys if k in new}
    return there, here


def _short(value) -> str:
    """A manifest value for an error message: long lists are summarised."""
    if isinstance(value, list) and len(value) > 6:
        return f"[{len(value)} items]"
    return repr(value)
