"""How much of each prompt the local server had already read, from an evaluation's recorded runs.

``python bench/prompt_reuse.py bench/results/seed7-baseline-same-day
bench/results/distractors-seed7-parts``

The embedded server reads a prompt at some 50-100 tokens a second on this CPU, and keeps what
it read of the previous request: a new prompt that begins with the same text is read only from
where the two part ("prefix-match hit"). So the seconds of a question depend on the question
before it. Asked on their own databases, consecutive questions about the same database send the
same instructions and schema; asked on a merged file, schema retrieval gives each question its
own tables, and the server reads most of each prompt anew.

For every folder (runs in the order they finished) this reports, from the first model call of
each run (the only one for ``baseline``; for a pipeline of several calls the calls between are
not counted, so it then says less): the share of the prompt the previous run's first prompt
already held as a prefix, the share left to read under llama.cpp's chunk reuse
(``--cache-reuse N``: after the common prefix, the server scans the old prompt and keeps every
run of at least N matching characters found where the new prompt has got to, shifted into
place; simulated on characters, so it is an estimate of what that server option would save),
the new tokens that leaves (the recorded prompt tokens times the share), and the model seconds
at the median. ``fit`` is a least-squares fit of a call's model seconds to the prompt tokens it
left unread (by prefix) and the tokens it wrote: the seconds a token of each costs on the
machine and day the folder was recorded.

With ``--orders``, for folders asked on a merged file (their manifest's ``ask_db``) whose prompts
hold the schema as ``CREATE TABLE`` statements (``baseline``'s), the same is measured with the
kept tables put in another order before the question: ``parts`` (the tables of each part of the
schema, :mod:`agents.retrieval.parts`, together, parts in the order of their best-ranked table,
the file's order within a part) and ``rank`` (retrieval's ranking); ``orders_skipped`` says
why not (a folder asked on the own databases, the file not built here -- ``bench/merge_spider.py``
builds it --, or prompts holding the schema in another form). Nothing is asserted: it is a
measurement of recorded prompts.

With ``--replay N`` it measures instead what a server does with them now: each folder's first N
runs (in the order they finished) send their first call's messages again, folder after folder, to
a server (the embedded model, started afresh for each folder so that none finds another's
prompts in its cache, or ``--base-url``), and the report gives llama.cpp's own timings
(the prompt tokens it read -- the rest came from its cache -- and the milliseconds per token read
and written) with the seconds at the median, beside the seconds recorded for the same calls,
and how many answers are the ones recorded (temperature 0; a call that writes other tokens takes
other seconds); every call's figures follow. Folders recorded on different days ran at
whatever speed the machine had then; replayed back to back they are compared at one speed. For
a pipeline of several calls only the first is sent, and a first call answered from the
response cache is passed over.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import re
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

CHUNKS = (64, 256)   # characters: about 16 and 64 tokens
SCHEMA_HEAD = "### Database schema\n"
_TABLE = re.compile(r"CREATE TABLE .*?\n\);\n?", re.S)
_NAME = re.compile(r'CREATE TABLE [`"\[]?([^\s(`"\]]+)')


def _first(record: dict) -> tuple[dict, dict] | None:
    """The step and the call of a recorded run's first model call."""
    for event in (record.get("run") or {}).get("events") or []:
        for call in event.get("calls") or []:
            return event, call
    return None


def first_call(record: dict) -> tuple[str, int, float, int] | None:
    """The text, prompt tokens, model seconds and completion tokens of a recorded run's first
    model call (the step that made it, when it made only one)."""
    found = _first(record)
    if found is None:
        return None
    event, call = found
    text = "".join(str(m.get("content") or "") for m in call.get("messages") or [])
    return (text, int(event.get("prompt_tokens") or 0),
            float(event.get("llm_seconds") or 0.0), int(event.get("completion_tokens") or 0))


def first_request(record: dict) -> dict | None:
    """A recorded run's first model call as a request to send again (``messages``, ``model``)
    with what was recorded of it (``seconds``, ``completion_tokens``, the answer ``raw``); None
    when the run made no call or its first came from the response cache (no seconds to
    compare)."""
    found = _first(record)
    if found is None or found[1].get("cached"):
        return None
    event, call = found
    return {"pipeline": record.get("pipeline") or "", "qid": record.get("question_id"),
            "step": event.get("step"), "messages": call.get("messages") or [],
            "model": str(call.get("model") or "local"),
            "seconds": float(call.get("seconds") or 0.0),
            "completion_tokens": call.get("completion_tokens"), "raw": call.get("raw")}


def common_prefix(a: str, b: str) -> int:
    """Characters ``a`` and ``b`` begin with alike."""
    return len(os.path.commonprefix([a, b]))


def reused(cached: str, prompt: str, chunk: int) -> int:
    """Characters of ``prompt`` the server keeps from ``cached``: the common prefix, then (as
    llama.cpp's server does with a cache-reuse size) every later run of at least ``chunk``
    characters that matches where the cache is scanned from."""
    head_c = head_p = kept = common_prefix(cached, prompt)
    while head_c < len(cached) and head_p < len(prompt):
        n = 0
        while (head_c + n < len(cached) and head_p + n < len(prompt)
               and cached[head_c + n] == prompt[head_p + n]):
            n += 1
        if n >= chunk:
            head_c += n
            head_p += n
            kept += n
        else:
            head_c += 1
    return kept


def reordered(text: str, record: dict, order: str, parts, position: dict) -> str | None:
    """``text`` with its ``CREATE TABLE`` statements in ``order`` (``parts`` or ``rank``);
    None when the prompt holds the schema otherwise."""
    start = text.find(SCHEMA_HEAD)
    if start < 0:
        return None
    start += len(SCHEMA_HEAD)
    end = text.find("\n###", start)
    if end < 0:
        return None
    body = text[start:end]
    blocks = _TABLE.findall(body + "\n")
    if not blocks or "".join(blocks).strip() != body.strip():
        return None
    trail = body[len(body.rstrip("\n")):]
    names = [_NAME.match(b).group(1) for b in blocks]
    kept = next((e.get("parsed") or {} for e in record["run"]["events"]
                 if e.get("step") == "retrieve"), {}).get("kept") or []
    rank = {row["table"]: i for i, row in enumerate(kept)}
    late = len(rank)
    if order == "rank":
        key = {n: (rank.get(n, late),) for n in names}
    else:
        part = {n: parts.of.get(n, n) for n in names}
        best = {}
        for n in names:
            best[part[n]] = min(best.get(part[n], late), rank.get(n, late))
        key = {n: (best[part[n]], position.get(n, 0)) for n in names}
    ordered = sorted(range(len(blocks)), key=lambda i: key[names[i]])
    return text[:start] + "".join(blocks[i] for i in ordered).rstrip("\n") + trail + text[end:]


def schema_of(folder: Path) -> tuple[tuple | None, str | None]:
    """The parts and table positions of the merged file ``folder`` was asked on, and why not
    when there are none."""
    manifest = folder / "manifest.json"
    ask_db = json.loads(manifest.read_text()).get("ask_db") if manifest.is_file() else None
    if not ask_db:
        return None, "asked on the questions' own databases"
    if not Path(ask_db).is_file():     # recorded on another checkout: the file of that name here
        ask_db = ROOT / "bench" / "merged" / Path(ask_db).name
        if not ask_db.is_file():
            return None, f"{ask_db.name} is not in bench/merged/ (bench/merge_spider.py builds it)"
    from agents.db.database import open_database
    from agents.retrieval.parts import schema_parts
    schema = open_database(ask_db).schema
    return (schema_parts(schema), {t.name: i for i, t in enumerate(schema.tables)}), None


def in_order(folder: Path) -> list[dict]:
    """A folder's recorded runs in the order they finished."""
    records = [json.loads(line) for line in (folder / "results.jsonl").open()
               if line.strip()]
    return sorted(records, key=lambda r: r.get("finished_at") or "")


def measure(folder: Path, orders: bool = False) -> dict:
    records = in_order(folder)
    layout, skipped = schema_of(folder) if orders else (None, None)
    previous = ""
    before = {"parts": "", "rank": ""}
    rows = []
    unparsed = 0
    for record in records:
        call = first_call(record)
        if call is None:
            continue
        text, tokens, seconds, written = call
        fresh = {"prefix": 1 - common_prefix(previous, text) / max(1, len(text))}
        for chunk in CHUNKS:
            fresh[f"reuse{chunk}"] = 1 - reused(previous, text, chunk) / max(1, len(text))
        for order in before if layout else ():
            other = reordered(text, record, order, *layout)
            if other is None:
                unparsed += order == "parts"
                other = text
            fresh[f"order_{order}"] = 1 - common_prefix(before[order], other) / max(1, len(other))
            before[order] = other
        rows.append((fresh, tokens, seconds, written))
        previous = text
    if not rows:
        return {"folder": str(folder), "runs": 0}
    report = {"folder": str(folder), "runs": len(rows),
              "prompt_tokens_p50": statistics.median(t for _, t, _, _ in rows),
              "model_seconds_p50": round(statistics.median(s for _, _, s, _ in rows), 2)}
    for key in rows[0][0]:
        report[f"unread_share_p50_{key}"] = round(
            statistics.median(f[key] for f, *_ in rows), 3)
        report[f"new_tokens_p50_{key}"] = round(statistics.median(f[key] * t
                                                                  for f, t, *_ in rows))
    report["completion_tokens_p50"] = statistics.median(w for *_, w in rows)
    report["fit"] = seconds_fit([(f["prefix"] * t, w, s) for f, t, s, w in rows])
    if skipped:
        report["orders_skipped"] = skipped
    elif unparsed:
        report["orders_skipped"] = f"{unparsed} prompts hold the schema in another form"
    return report


def seconds_fit(rows: list[tuple[float, int, float]]) -> dict | None:
    """Least squares: seconds = base + a * unread prompt tokens + b * completion tokens."""
    if len(rows) < 3:
        return None
    import numpy
    design = numpy.array([[1.0, unread, written] for unread, written, _ in rows])
    (base, read, write), *_ = numpy.linalg.lstsq(design, numpy.array([s for *_, s in rows]),
                                                 rcond=None)
    return {"base_seconds": round(float(base), 2),
            "seconds_per_unread_token": round(float(read), 4),
            "seconds_per_completion_token": round(float(write), 3)}


def replay(folders: list[Path], count: int, base_url: str | None = None,
           done: list | None = None) -> list[dict]:
    """The first ``count`` runs of each folder sent again, one after another, to a server.

    llama.cpp keeps earlier prompts in memory and starts a new one from the best match, so a
    folder replayed after another would find its prompts' beginnings in that folder's (the same
    questions asked of another file). The embedded server is therefore started afresh for each
    folder; a server at ``base_url`` is what it is. Each folder's report is appended to ``done``
    as it finishes, so that what was measured survives a server that stops answering."""
    from openai import OpenAI

    from decoding import ask, embedded
    reports = [] if done is None else done
    to_stderr = functools.partial(print, file=sys.stderr, flush=True)
    for folder in folders:
        requests = [r for r in map(first_request, in_order(folder)) if r is not None][:count]
        server = (contextlib.nullcontext((OpenAI(base_url=base_url, api_key="none",
                                                 max_retries=0, timeout=900), None))
                  if base_url else embedded(timeout=900))
        rows = []
        with server as (client, model):
            for request in requests:
                answer = ask(client, model or request["model"], "replay", request,
                             log=to_stderr)
                rows.append({**answer, "recorded_seconds": request["seconds"],
                             "recorded_completion_tokens": request["completion_tokens"],
                             "as_recorded": answer["text"] == request["raw"]})
        reports.append({"folder": str(folder), **timing_report(rows)})
    return reports


def timing_report(rows: list[dict]) -> dict:
    """Medians and per-token costs of replayed calls (each an answer of ``decoding.ask`` with
    the ``recorded_seconds``, ``recorded_completion_tokens`` and whether the answer is the one
    recorded), and the calls themselves. The per-token figures are None when the server sent no
    timings; the answers as recorded say whether the seconds compare like with like (a call
    writing other tokens takes other seconds)."""
    if not rows:
        return {"replayed": 0}

    def total(key):
        values = [row.get(key) for row in rows]
        return None if None in values else sum(values)

    read, read_ms = total("prompt_n"), total("prompt_ms")
    written, written_ms = total("predicted_n"), total("predicted_ms")
    return {"replayed": len(rows),
            "seconds_p50": round(statistics.median(r["seconds"] for r in rows), 2),
            "recorded_seconds_p50": round(statistics.median(r["recorded_seconds"]
                                                            for r in rows), 2),
            "answers_as_recorded": sum(bool(r.get("as_recorded")) for r in rows),
            "prompt_tokens_read_p50": (statistics.median(r["prompt_n"] for r in rows)
                                       if read is not None else None),
            "ms_per_token_read": round(read_ms / read, 1) if read and read_ms else None,
            "ms_per_token_written": (round(written_ms / written, 1)
                                     if written and written_ms else None),
            "runs": [{key: row.get(key) for key in (
                "qid", "seconds", "recorded_seconds", "prompt_n", "predicted_n",
                "recorded_completion_tokens", "as_recorded")} for row in rows]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path,
                        help="evaluation folders (results.jsonl with each run's trace)")
    parser.add_argument("--orders", action="store_true",
                        help="also measure the kept tables in other orders (merged files)")
    parser.add_argument("--replay", type=int, metavar="N",
                        help="send each folder's first N first calls again to a server and "
                             "report its timings (the embedded model unless --base-url)")
    parser.add_argument("--base-url", help="an OpenAI-compatible server for --replay")
    args = parser.parse_args(argv)
    missing = [str(f) for f in args.folders if not (f / "results.jsonl").is_file()]
    if missing:
        print(f"no results.jsonl in: {', '.join(missing)}", file=sys.stderr)
        return 2
    if args.replay is not None:
        if args.replay < 1:
            print("--replay needs a number of runs of at least 1", file=sys.stderr)
            return 2
        if args.orders:
            print("--orders measures recorded prompts; it does nothing with --replay",
                  file=sys.stderr)
            return 2
        from openai import OpenAIError

        from agents.llm.local_model import LocalModelError
        done: list[dict] = []
        try:
            replay(args.folders, args.replay, args.base_url, done)
        except (OpenAIError, LocalModelError) as exc:
            print(json.dumps(done, indent=1))
            print(f"the replay stopped: {exc}" + (f" (folders finished before it, reported "
                                                  f"above: {len(done)})" if done else ""),
                  file=sys.stderr)
            return 1
        print(json.dumps(done, indent=1))
        return 0
    if args.base_url:
        print("--base-url is the server of --replay; without it nothing is sent",
              file=sys.stderr)
        return 2
    print(json.dumps([measure(folder, args.orders) for folder in args.folders], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
