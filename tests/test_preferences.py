"""Each user's preferences in the store: kept across openings, per user, known keys only and
never a secret."""

from __future__ import annotations

import sqlite3

import pytest

from agents.store import LOCAL_USER, SCHEMA_VERSION, Store, StoreError, StoreView, Viewer

ANA = Viewer("ana", "analyst", team=True)
BO = Viewer("bo", "analyst", team=True)


@pytest.fixture
def path(tmp_path):
    return tmp_path / "studio.db"


def _stored_text(path) -> str:
    """Everything the preference table holds, as one text (what a copy of the file shows)."""
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute("SELECT user, key, value_json FROM user_preferences").fetchall()
    finally:
        conn.close()
    return repr(rows)


def test_preferences_round_trip_across_openings(path):
    values = {"ask_pipeline": "baseline", "ask_summary": False,
              "llm": {"provider": "openai", "model": "m", "temperature": 0.3},
              "exec_limits": {"timeout": 4.5, "max_rows": 200},
              "pipeline.macsql": {"max_refine": 2, "use_selector": False}}
    with Store(path) as store:
        assert store.preferences() == {}
        assert store.save_preferences(values) == values
    with Store(path) as store:
        assert store.preferences() == values


def test_a_saved_key_is_replaced_and_none_forgets_it(path):
    with Store(path) as store:
        store.save_preferences({"ask_pipeline": "macsql", "ask_summary": True})
        store.save_preferences({"ask_pipeline": "r3"})
        assert store.preferences() == {"ask_pipeline": "r3", "ask_summary": True}
        store.save_preferences({"ask_summary": None})
        assert store.preferences() == {"ask_pipeline": "r3"}


def test_each_user_has_their_own(path):
    with Store(path) as store:
        StoreView(store, ANA).save_preferences({"ask_pipeline": "baseline"})
        StoreView(store, BO).save_preferences({"ask_pipeline": "csma"})
        store.save_preferences({"ask_pipeline": "r3"})  # local mode's one user
        assert StoreView(store, ANA).preferences() == {"ask_pipeline": "baseline"}
        assert StoreView(store, BO).preferences() == {"ask_pipeline": "csma"}
        assert store.preferences() == {"ask_pipeline": "r3"}


def test_nobody_signed_in_has_none_and_saves_none(path):
    nobody = Viewer("", "analyst", team=True)
    with Store(path) as store:
        assert StoreView(store, nobody).preferences() == {}
        with pytest.raises(ValueError, match="sign in"):
            StoreView(store, nobody).save_preferences({"ask_pipeline": "baseline"})


def test_unknown_keys_are_ignored_on_save_and_on_load(path):
    with Store(path) as store:
        kept = store.save_preferences({"ask_pipeline": "baseline", "colour": "red",
                                       "pipeline.not a name": {}, 7: "x"})
        assert kept == {"ask_pipeline": "baseline"}
        store.db.execute("INSERT INTO user_preferences VALUES (?, 'old_key', '1', '')",
                         [LOCAL_USER])
        store.db.execute("INSERT INTO user_preferences VALUES (?, 'ask_summary', 'not json', '')",
                         [LOCAL_USER])
        store.db.conn.commit()
        assert store.preferences() == {"ask_pipeline": "baseline"}


def test_secrets_are_never_written(path):
    key = "sk-very-secret-123"
    with Store(path) as store:
        kept = store.save_preferences({
            "api_key": key,
            "llm": {"provider": "openai", "base_url": "http://127.0.0.1:8080/v1",
                    "api_key": key, "Password": key},
            "pipeline.macsql": {"max_refine": 2, "client_secret": key}})
        assert kept == {"llm": {"provider": "openai", "base_url": "http://127.0.0.1:8080/v1"},
                        "pipeline.macsql": {"max_refine": 2}}
        store.save_preferences({"llm": {"base_url": f"https://me:{key}@example.com/v1"}})
        assert store.preferences()["llm"] == {"base_url": None}
    assert key not in _stored_text(path) and "api_key" not in _stored_text(path)


def test_a_read_only_store_reads_them_and_refuses_to_save(path):
    with Store(path) as store:
        store.save_preferences({"ask_pipeline": "baseline"})
    with Store(path, read_only="The folder is read-only.") as store:
        assert store.preferences() == {"ask_pipeline": "baseline"}
        with pytest.raises(StoreError, match="Nothing can be saved"):
            store.save_preferences({"ask_pipeline": "csma"})


def test_a_store_from_before_preferences_gets_the_table(path):
    with Store(path) as store:
        store.save_preferences({"ask_pipeline": "baseline"})
    conn = sqlite3.connect(path)
    conn.execute("DROP TABLE user_preferences")
    conn.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    with Store(path) as store:
        assert store.preferences() == {}
        store.save_preferences({"ask_summary": False})
        assert store.preferences() == {"ask_summary": False}
        version = store.db.execute("SELECT value FROM meta WHERE key = 'schema_version'")
        assert version.fetchone()[0] == str(SCHEMA_VERSION)
