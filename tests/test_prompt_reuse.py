"""``bench/prompt_reuse.py``: how much of a recorded prompt the server had already read in the
one before, by common prefix and by llama.cpp's chunk reuse, and the kept tables reordered."""

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


def test_a_replay_sends_each_folders_first_calls_again_in_order(prompt_reuse, tmp_path,
                                                               scripted_llm, capsys):
    def record(at, question):
        events = [{"step": "writer", "calls": [{"model": "m", "messages": [
            {"role": "user", "content": prompt(["a"], question)}]}],
            "prompt_tokens": 100, "llm_seconds": 3.0}]
        return {"finished_at": at, "run": {"events": events}}

    rows = [record("3", "third?"), record("1", "first?"), record("2", "second?")]
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    scripted_llm.push("SELECT 1", "SELECT 2")
    assert prompt_reuse.main(["--replay", "2", "--base-url", scripted_llm.base_url,
                              str(tmp_path)]) == 0
    [report] = json.loads(capsys.readouterr().out)
    assert [r["messages"][0]["content"][-6:] for r in scripted_llm.requests] == [
        "first?", "econd?"]
    assert all(r["temperature"] == 0 for r in scripted_llm.requests)
    # this server sends no timings: the per-token figures say so
    assert report["replayed"] == 2 and report["recorded_seconds_p50"] == 3.0
    assert report["ms_per_token_read"] is None and report["prompt_tokens_read_p50"] is None
    # a server that stops answering ends the replay with one message
    assert prompt_reuse.main(["--replay", "1", "--base-url", scripted_llm.base_url,
                              str(tmp_path)]) == 1
    assert capsys.readouterr().err.startswith("the replay stopped:")
    assert prompt_reuse.main(["--replay", "0", str(tmp_path)]) == 2


def test_timings_give_the_cost_of_a_token_read_and_written(prompt_reuse):
    rows = [({"prompt_n": 100, "prompt_ms": 3000.0, "predicted_n": 40, "predicted_ms": 4000.0},
             7.1, 5.0),
            ({"prompt_n": 20, "prompt_ms": 600.0, "predicted_n": 10, "predicted_ms": 1000.0},
             1.7, 1.0)]
    report = prompt_reuse.timing_report(rows)
    assert report == {"replayed": 2, "seconds_p50": 4.4, "recorded_seconds_p50": 3.0,
                      "prompt_tokens_read_p50": 60.0, "ms_per_token_read": 30.0,
                      "ms_per_token_written": 100.0}
    assert prompt_reuse.timing_report([]) == {"replayed": 0}
