"""Decoding modes of the embedded server side by side, on the same recorded requests.

``python bench/decoding.py --results bench/results/spider-dev-stratified-seed7 --pipelines
baseline,macsql --questions 20 --modes standard,ngram,draft --out bench/results/decoding.json``

Every model request that the named pipelines sent for the first ``--questions`` questions of an
evaluation folder is replayed, in the order they were sent, against a fresh embedded server in
each decoding mode (:data:`agents.llm.local_model.DECODING_MODES`): temperature 0, the recorded
``max_tokens`` ceiling, no response cache. Replaying recorded requests takes the pipelines' own
randomness out of the comparison: every mode reads exactly the same prompts in the same order,
so the server's prefix cache helps each mode alike. For each mode it reports completion tokens
per second (llama.cpp's own decode timing), prompt tokens per second, end-to-end seconds per
request (median, p95) and how many answers are byte-identical to the standard mode's.
``--slots 1,2`` also runs each mode with two requests decoded in one batch (llama.cpp's parallel
slots), sent two at a time: the wall time of the whole replay and the completion tokens per
wall second say whether independent requests (a pipeline's candidates) would finish sooner.

Nothing is asserted: it is a measurement. Run it on an otherwise idle machine; it says the load
average before and after.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import functools
import gc
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agents.evaluation.records import ResultsFile  # noqa: E402
from agents.evaluation.report import machine_info  # noqa: E402
from agents.llm.local_model import DECODING_MODES, LocalServer
from openai import OpenAI  # noqa: E402

MAX_TOKENS = 1024


def recorded_requests(results_dir: Path, pipelines: list[str], questions: int) -> list[dict]:
    """The model requests of the first ``questions`` questions, per pipeline, in sent order."""
    records = ResultsFile(results_dir / "results.jsonl").read()
    order: list[int] = []
    for record in records:
        if record["question_id"] not in order:
            order.append(record["question_id"])
    wanted = set(order[:questions])
    requests = []
    for pipeline in pipelines:
        for record in records:
            if record["pipeline"] != pipeline or record["question_id"] not in wanted:
                continue
            for event in (record.get("run") or {}).get("events", []):
                for call in event.get("calls") or []:
                    messages = call.get("messages")
                    if isinstance(messages, str):
                        messages = ast.literal_eval(messages)
                    if messages and not call.get("cached"):
                        requests.append({"pipeline": pipeline, "qid": record["question_id"],
                                         "step": event.get("step"), "messages": messages})
    return requests


def ask(client, model: str, label: str, request: dict,
        log=functools.partial(print, flush=True), max_tokens: int = MAX_TOKENS) -> dict:
    """One recorded request sent again (temperature 0), with the server's own timings: the
    prompt tokens it read (``prompt_n``; the rest came from its cache) and wrote, and the
    milliseconds each took. ``log`` gets one line per request."""
    started = time.perf_counter()
    reply = client.chat.completions.create(
        model=model, messages=request["messages"], temperature=0.0,
        max_tokens=max_tokens, seed=0)
    seconds = time.perf_counter() - started
    timings = (reply.model_extra or {}).get("timings") or {}
    log(f"  {label} {request['pipeline']} q{request['qid']} {request['step']}: "
        f"{seconds:.1f} s, {reply.usage.completion_tokens} tokens")
    return {"pipeline": request["pipeline"], "qid": request["qid"],
            "step": request["step"], "seconds": round(seconds, 3),
            "text": reply.choices[0].message.content or "",
            "prompt_tokens": reply.usage.prompt_tokens,
            "completion_tokens": reply.usage.completion_tokens,
            "prompt_n": timings.get("prompt_n"),
            "prompt_ms": timings.get("prompt_ms"),
            "predicted_n": timings.get("predicted_n"),
            "predicted_ms": timings.get("predicted_ms"),
            "draft_n": timings.get("draft_n"),
            "draft_accepted": timings.get("draft_n_accepted")}


@contextlib.contextmanager
def embedded(mode: str = "standard", threads: int = 2, slots: int = 1, timeout: float = 1800):
    """A fresh embedded server, as ``(client, model)``; stopped on leaving, collected at once so
    that the next one never shares the CPU or the memory with it, and never finds its cache."""
    server = LocalServer("1.5b", n_ctx=8192, threads=threads, decoding=mode, slots=slots)
    client = OpenAI(base_url=server.start(), api_key="none", max_retries=0, timeout=timeout)
    try:
        yield client, server.spec.model_name
    finally:
        del client, server
        gc.collect()


def replay(mode: str, requests: list[dict], threads: int, slots: int = 1
           ) -> tuple[list[dict], float]:
    """Answers to ``requests`` in order, and the wall seconds of the whole replay.

    With ``slots`` > 1 the server decodes that many requests in one batch and the requests are
    sent that many at a time (as a pipeline with independent candidates could send them).
    """
    from concurrent.futures import ThreadPoolExecutor

    with embedded(mode, threads, slots) as (client, model):
        started = time.perf_counter()
        with ThreadPoolExecutor(max_workers=slots) as pool:
            answers = list(pool.map(functools.partial(ask, client, model, mode), requests))
        wall = time.perf_counter() - started
    return answers, wall


def summary(answers: list[dict], wall: float, reference: list[dict] | None) -> dict:
    decoded = sum(a["predicted_n"] or 0 for a in answers)
    decode_s = sum((a["predicted_ms"] or 0) for a in answers) / 1000
    read = sum(a["prompt_n"] or 0 for a in answers)
    read_s = sum((a["prompt_ms"] or 0) for a in answers) / 1000
    seconds = sorted(a["seconds"] for a in answers)
    out = {"requests": len(answers),
           "completion_tokens_per_s": round(decoded / decode_s, 2) if decode_s else None,
           "prompt_tokens_read_per_s": round(read / read_s, 2) if read_s else None,
           "prompt_tokens_read": read, "completion_tokens": decoded,
           "seconds_total": round(sum(seconds), 1),
           "wall_seconds": round(wall, 1),
           "completion_tokens_per_wall_s": round(decoded / wall, 2) if wall else None,
           "seconds_p50": round(statistics.median(seconds), 2),
           "seconds_p95": round(seconds[min(len(seconds) - 1, int(0.95 * len(seconds)))], 2)}
    drafted = sum(a["draft_n"] or 0 for a in answers)
    if drafted:
        out["draft_tokens"] = drafted
        out["draft_accepted"] = sum(a["draft_accepted"] or 0 for a in answers)
    if reference is not None:
        out["identical_to_standard"] = sum(a["text"] == r["text"]
                                           for a, r in zip(answers, reference))
    for pipeline in sorted({a["pipeline"] for a in answers}):
        per_q: dict[int, float] = {}
        for a in answers:
            if a["pipeline"] == pipeline:
                per_q[a["qid"]] = per_q.get(a["qid"], 0.0) + a["seconds"]
        values = sorted(per_q.values())
        out[f"{pipeline}_model_seconds_per_question_p50"] = round(statistics.median(values), 2)
        out[f"{pipeline}_model_seconds_per_question_p95"] = round(
            values[min(len(values) - 1, int(0.95 * len(values)))], 2)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", default="bench/results/spider-dev-stratified-seed7")
    parser.add_argument("--pipelines", default="baseline,macsql")
    parser.add_argument("--questions", type=int, default=20)
    parser.add_argument("--modes", default=",".join(DECODING_MODES))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--slots", default="1",
                        help="comma-separated slot counts: each mode also runs with that many "
                             "requests decoded in one batch, sent that many at a time (e.g. 1,2)")
    parser.add_argument("--out", default="bench/results/decoding.json")
    args = parser.parse_args(argv)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    requests = recorded_requests(Path(args.results), args.pipelines.split(","), args.questions)
    print(f"{len(requests)} recorded requests; modes: {', '.join(modes)}", flush=True)
    load_before = os.getloadavg()
    slot_counts = [int(n) for n in args.slots.split(",") if n.strip()]
    runs = {}
    for mode in modes:
        for slots in slot_counts:
            label = mode if slots == 1 else f"{mode} x{slots} slots"
            runs[label] = replay(mode, requests, args.threads, slots)
    reference = runs["standard"][0] if "standard" in runs else None
    report = {"machine": machine_info(), "load_average_before": load_before,
              "load_average_after": os.getloadavg(), "settings": vars(args),
              "modes": {label: summary(a, wall, reference if label != "standard" else None)
                        for label, (a, wall) in runs.items()},
              "answers": {label: a for label, (a, _) in runs.items()}}
    Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report["modes"], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
