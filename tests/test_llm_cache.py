"""The on-disk response cache: keys, round trips, threads and damaged files."""

from __future__ import annotations

import sqlite3
import threading

from agents.llm.client import LLMReply
from agents.llm.cache import ResponseCache, cache_key, default_cache_path

BASE = dict(model="m", messages=[{"role": "user", "content": "q"}], temperature=0.0,
            max_tokens=100, json_schema=None, stop=None, endpoint="http://h/v1")


def reply(text: str = "SELECT 1") -> LLMReply:
    return LLMReply(text=text, model="m", prompt_tokens=10, completion_tokens=2, seconds=3.2)


def test_key_changes_with_every_ingredient():
    key = cache_key(**BASE)
    assert key == cache_key(**dict(BASE))  # deterministic
    assert len(key) == 64
    changes = [("temperature", 0.5), ("model", "other"), ("max_tokens", 101),
               ("messages", [{"role": "user", "content": "q2"}]), ("stop", [";"]),
               ("json_schema", {"type": "object"}), ("endpoint", "local:1.5b")]
    keys = {cache_key(**{**BASE, name: value}) for name, value in changes}
    assert key not in keys and len(keys) == len(changes)
    assert cache_key(**BASE, sample=1) != key


def test_key_ignores_dict_order():
    a = {**BASE, "json_schema": {"type": "object", "properties": {"a": {}, "b": {}}}}
    b = {**BASE, "json_schema": {"properties": {"b": {}, "a": {}}, "type": "object"}}
    assert cache_key(**a) == cache_key(**b)


def test_round_trip_marks_cached_and_zero_seconds(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    assert cache.get("k") is None
    cache.put("k", reply("SELECT 7"))
    hit = cache.get("k")
    assert (hit.text, hit.model, hit.prompt_tokens, hit.completion_tokens) == ("SELECT 7", "m",
                                                                                10, 2)
    assert hit.cached is True and hit.seconds == 0.0
    assert len(cache) == 1
    cache.clear()
    assert len(cache) == 0


def test_default_path_is_in_the_cache_dir(isolated_studio):
    assert default_cache_path() == isolated_studio / "cache" / "llm_cache.sqlite"
    cache = ResponseCache()
    cache.put("k", reply())
    assert (isolated_studio / "cache" / "llm_cache.sqlite").is_file()
    mode = sqlite3.connect(cache.path).execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


def test_thread_safe_under_concurrent_writers(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    errors = []

    def work(n: int) -> None:
        try:
            for i in range(25):
                cache.put(f"{n}-{i}", reply(f"{n}-{i}"))
                assert cache.get(f"{n}-{i}").text == f"{n}-{i}"
        except Exception as exc:  # collected, so the failure shows in the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(cache) == 100


def test_corrupt_file_is_moved_aside_and_recreated(tmp_path):
    path = tmp_path / "c.sqlite"
    path.write_bytes(b"this is not a sqlite database at all " * 100)
    cache = ResponseCache(path)
    assert cache.get("k") is None
    cache.put("k", reply())
    assert cache.get("k").text == "SELECT 1"
    aside = list(tmp_path.glob("c.sqlite.corrupt-*"))
    assert len(aside) == 1 and aside[0].read_bytes().startswith(b"this is not")


def test_file_with_damaged_pages_is_recovered(tmp_path):
    """A valid header but a scribbled-over table page: 'database disk image is malformed'."""
    path = tmp_path / "c.sqlite"
    cache = ResponseCache(path)
    for i in range(50):
        cache.put(f"k{i}", reply("x" * 500))
    cache.close()
    sqlite3.connect(path).execute("PRAGMA wal_checkpoint(TRUNCATE)").close()
    data = bytearray(path.read_bytes())
    page = 4096
    data[page:page * 3] = b"\xff" * (page * 2)  # pages 2-3, past the schema page
    path.write_bytes(bytes(data))
    cache = ResponseCache(path)
    assert cache.get("k1") is None  # lost, not crashed
    cache.put("k2", reply("SELECT 2"))
    assert cache.get("k2").text == "SELECT 2"
    assert list(tmp_path.glob("c.sqlite.corrupt-*"))


def test_unwritable_location_turns_the_cache_off_without_raising(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    cache = ResponseCache(blocker / "sub" / "c.sqlite")  # parent is a file: cannot create
    cache.put("k", reply())
    assert cache.get("k") is None
    assert cache.disabled_reason
