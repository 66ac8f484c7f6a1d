"""``bench/prompt_reuse.py``: how much of a recorded prompt the server had already read in the
one before, by common prefix and by llama.cpp's chunk reuse, the kept tables reordered, and the
recorded first calls sent again with the server's timings."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from bench_scripts import bench_script

HEAD = "Rules.\n\n### Database schema\n"
TAIL = "\n\n### Question\n"


def table(name: str) -> str:
    return f"CREATE TABLE {name} (\n  {name}_id INT PRIMARY KEY,\n  label TEXT\n);\n"


def prompt(names, question="q?") -> str:
    return HEAD + "".join(table(n) for n in names).rstrip("\n") + TAIL + question


@pytest.fixture
def prompt_reuse(monkeypatch):
    return bench_script(monkeypatch, "prompt_reuse")


def test_chunk_reuse_keeps_what_recurs_in_order_after_a_dropped_table(prompt_reuse):
    before = prompt(["alpha", "beta", "gamma"])
    dropped = prompt(["alpha", "gamma"])
    prefix = prompt_reuse.common_prefix(before, dropped)
    assert len(HEAD + table("alpha")) <= prefix < len(HEAD + table("alpha") + table("beta"))
    # the gamma statement recurs after the dropped beta: reused when long enough
    assert prompt_reuse.reused(before, dropped, 16) >= prefix + len(table("gamma")) - 1
    assert prompt_reuse.reused(before, dropped, 10_000) == prefix
    # an added table stops the scan: nothing after it is found again
    added = prompt(["alpha", "delta", "beta", "gamma"])
    assert prompt_reuse.reused(before, added, 16) < len(added) - len(table("delta"))


def test_tables_reordered_by_part_and_by_rank(prompt_reuse):
    text = prompt(["a1", "b1", "a2"])
    record = {"run": {"events": [{"step": "retrieve", "parsed": {"kept": [
        {"table": "b1"}, {"table": "a2"}, {"table": "a1"}]}}]}}
    parts = SimpleNamespace(of={"a1": "a1", "a2": "a1", "b1": "b1"})
    position = {"a1": 0, "b1": 1, "a2": 2}
    assert prompt_reuse.reordered(text, record, "rank", parts, position) == prompt(
        ["b1", "a2", "a1"])
    # b1's part has the best-ranked table; a1 and a2 stay together, in the file's order
    assert prompt_reuse.reordered(text, record, "parts", parts, position) == prompt(
        ["b1", "a1", "a2"])
    assert prompt_reuse.reordered("no schema here", record, "rank", parts, position) is None


def test_a_folder_is_measured_in_the_order_its_runs_finished(prompt_reuse, tmp_path, capsys):
    def record(names, at, question):
        events = [{"step": "writer", "calls": [{"messages": [
            {"role": "user", "content": prompt(names, question)}]}],
            "prompt_tokens": 100, "llm_seconds": 2.0}]
        return {"finished_at": at, "run": {"events": events}}

    rows = [record(["a", "b"], "2", "second?"), record(["a", "b"], "1", "first?")]
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert prompt_reuse.main([str(tmp_path)]) == 0
    [report] = json.loads(capsys.readouterr().out)
    assert report["runs"] == 2 and report["model_seconds_p50"] == 2.0
    # the first prompt is read whole, the second only from its question on
    first_unread = 1.0
    second_unread = 1 - prompt_reuse.common_prefix(prompt(["a", "b"], "first?"),
                                                   prompt(["a", "b"], "second?")) / len(
        prompt(["a", "b"], "second?"))
    assert report["unread_share_p50_prefix"] == round((first_unread + second_unread) / 2, 3)
    assert report["fit"] is None and "orders_skipped" not in report   # too few runs to fit
    assert prompt_reuse.main(["--orders", str(tmp_path)]) == 0
    assert json.loads(capsys.readouterr().out)[0]["orders_skipped"] == (
        "asked on the questions' own databases")
    assert prompt_reuse.main([str(tmp_path / "nosuch")]) == 2


def replay_record(at, question, seconds, raw="", cached=False):
    events = [{"step": "writer", "calls": [{"model": "m", "seconds": seconds, "raw": raw,
                                            "completion_tokens": 2, "cached": cached,
                                            "messages": [{"role": "user",
                                                          "content": prompt(["a"], question)}]}],
               "prompt_tokens": 100, "llm_seconds": 9.0}]
    return {"finished_at": at, "question_id": int(at), "pipeline": "baseline",
            "run": {"events": events}}


def write_folder(folder, rows):
    folder.mkdir(exist_ok=True)
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


def test_a_replay_sends_each_folders_first_calls_again_in_order(prompt_reuse, tmp_path,
                                                               scripted_llm, capsys):
    folder = write_folder(tmp_path / "runs", [
        replay_record("4", "fourth?", 4.0), replay_record("1", "first?", 1.0, raw="SELECT 1"),
        replay_record("3", "third?", 3.0), replay_record("2", "cached?", 7.0, cached=True)])
    scripted_llm.push("SELECT 1", "SELECT 2")
    assert prompt_reuse.main(["--replay", "2", "--base-url", scripted_llm.base_url,
                              str(folder)]) == 0
    [report] = json.loads(capsys.readouterr().out)
    # in the order the runs finished, the one answered from the response cache passed over
    assert [r["messages"][0]["content"][-6:] for r in scripted_llm.requests] == [
        "first?", "third?"]
    assert all(r["temperature"] == 0 for r in scripted_llm.requests)
    # the call's own recorded seconds (not its step's), and which answers are the recorded ones
    assert report["replayed"] == 2 and report["recorded_seconds_p50"] == 2.0
    assert report["answers_as_recorded"] == 1
    assert [(r["qid"], r["recorded_seconds"], r["as_recorded"]) for r in report["runs"]] == [
        (1, 1.0, True), (3, 3.0, False)]
    # this server sends no timings: the per-token figures say so
    assert report["ms_per_token_read"] is None and report["prompt_tokens_read_p50"] is None


def test_a_replay_that_stops_keeps_the_folders_it_finished(prompt_reuse, tmp_path,
                                                           scripted_llm, capsys):
    first = write_folder(tmp_path / "first", [replay_record("1", "first?", 1.0)])
    second = write_folder(tmp_path / "second", [replay_record("1", "again?", 1.0)])
    scripted_llm.push("SELECT 1")   # nothing left for the second folder
    assert prompt_reuse.main(["--replay", "1", "--base-url", scripted_llm.base_url,
                              str(first), str(second)]) == 1
    out = capsys.readouterr()
    assert [r["folder"] for r in json.loads(out.out)] == [str(first)]
    assert out.err.strip().splitlines()[-1].startswith("the replay stopped:")
    assert "folders finished before it, reported above: 1" in out.err
    # options that would do nothing are refused
    assert prompt_reuse.main(["--replay", "0", str(first)]) == 2
    assert prompt_reuse.main(["--replay", "1", "--orders", str(first)]) == 2
    assert prompt_reuse.main(["--base-url", scripted_llm.base_url, str(first)]) == 2


def test_each_folder_is_replayed_on_a_server_of_its_own(prompt_reuse, tmp_path, scripted_llm,
                                                        monkeypatch, capsys):
    import contextlib

    from openai import OpenAI

    import decoding
    started = []

    @contextlib.contextmanager
    def embedded(**settings):
        started.append(settings)
        yield OpenAI(base_url=scripted_llm.base_url, api_key="none", max_retries=0), "served"

    monkeypatch.setattr(decoding, "embedded", embedded)
    folders = [write_folder(tmp_path / name, [replay_record("1", f"{name}?", 1.0)])
               for name in ("own", "merged")]
    timings = {"prompt_n": 30, "prompt_ms": 600.0, "predicted_n": 4, "predicted_ms": 400.0}
    scripted_llm.push(*[{"body": json.dumps({
        "id": "x", "object": "chat.completion", "created": 0, "model": "served",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": "SELECT 1"}}],
        "usage": {"prompt_tokens": 30, "completion_tokens": 4, "total_tokens": 34},
        "timings": timings})}] * 2)
    assert prompt_reuse.main(["--replay", "1", *map(str, folders)]) == 0
    assert len(started) == 2   # a fresh server for each folder
    assert [r["model"] for r in scripted_llm.requests] == ["served", "served"]
    reports = json.loads(capsys.readouterr().out)
    assert [(r["prompt_tokens_read_p50"], r["ms_per_token_read"], r["ms_per_token_written"])
            for r in reports] == [(30, 20.0, 100.0)] * 2


def test_timings_give_the_cost_of_a_token_read_and_written(prompt_reuse):
    rows = [{"qid": 1, "seconds": 7.1, "recorded_seconds": 5.0, "as_recorded": True,
             "prompt_n": 100, "prompt_ms": 3000.0, "predicted_n": 40, "predicted_ms": 4000.0,
             "recorded_completion_tokens": 40},
            {"qid": 2, "seconds": 1.7, "recorded_seconds": 1.0, "as_recorded": False,
             "prompt_n": 20, "prompt_ms": 600.0, "predicted_n": 10, "predicted_ms": 1000.0,
             "recorded_completion_tokens": 12}]
    report = prompt_reuse.timing_report(rows)
    assert {k: v for k, v in report.items() if k != "runs"} == {
        "replayed": 2, "seconds_p50": 4.4, "recorded_seconds_p50": 3.0,
        "answers_as_recorded": 1, "prompt_tokens_read_p50": 60.0, "ms_per_token_read": 30.0,
        "ms_per_token_written": 100.0}
    assert [(r["qid"], r["predicted_n"], r["recorded_completion_tokens"])
            for r in report["runs"]] == [(1, 40, 40), (2, 10, 12)]
    assert prompt_reuse.timing_report([]) == {"replayed": 0}
