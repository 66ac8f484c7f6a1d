"""Settings saved for the user come back after a reload; the pipeline pickers offer what each
pipeline does for the user, the paper's name beside it."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from agents.pipelines import names as pipeline_names
from agents.store import Store, StoreError, default_path
from agents.store.connection import UNWRITABLE
from agents.store.preferences import PreferencesPart

from app_helpers import APP, TIMEOUT, errors
from team_page import signed_in, team_mode

LABELS = {
    "baseline": "Quick — one prompt",
    "macsql": "MAC-SQL — breaks the question down, repairs the SQL",
    "deasql": "DEA-SQL — hints, examples and self-correction",
    "r3": "R³ — reviewed until the reviewers agree",
    "csma": "CSMA — agents share the schema",
    "selection": "Thorough — several writers, results compared",
}


def button(at: AppTest, label: str):
    [found] = [b for b in at.button if b.label == label]
    return found


def reloaded() -> AppTest:
    """A browser reload: a new session of the same server, on the Ask page."""
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.run()
    assert not at.exception and errors(at) == [], (at.exception, errors(at))
    return at


def test_the_ask_picker_offers_plain_labels_and_starts_with_the_studios_choice(app):
    picker = app.selectbox(key="ask_pipeline")
    assert picker.options == [LABELS[n] for n in pipeline_names()]
    assert picker.value == "selection"
    assert any(e.label == f"Parameters of {LABELS['selection']}" for e in app.expander)
    app.switch_page("pages/compare.py").run()
    assert app.multiselect(key="cmp_pipelines").options == [LABELS[n] for n in pipeline_names()]


@pytest.fixture
def nothing_saved(app_env):
    """No saved settings at all (the app tests start with the summary saved off)."""
    with Store(default_path()) as store:
        store.save_preferences({"ask_summary": None})
    return app_env


def test_without_saved_settings_ask_summarizes_and_uses_candidate_selection(nothing_saved):
    at = reloaded()
    assert at.checkbox(key="ask_summary").value is True
    assert at.selectbox(key="ask_pipeline").value == "selection"


def test_ask_defaults_saved_on_settings_come_back_after_a_reload(app):
    app.switch_page("pages/settings.py").run()
    app.selectbox(key="set_ask_pipeline").select("macsql")
    app.toggle(key="set_ask_summary").set_value(True)
    button(app, "Save Ask defaults").click().run()
    assert not app.exception and errors(app) == [] and not app.warning
    [saved] = [s.value for s in app.success]
    assert saved == f"Saved: Ask starts with {LABELS['macsql']}, with the result in words."
    app.switch_page("pages/ask.py").run()  # this session's Ask page follows at once
    assert app.selectbox(key="ask_pipeline").value == "macsql"

    again = reloaded()
    picker = again.selectbox(key="ask_pipeline")
    assert picker.value == "macsql" and picker.options == [LABELS[n] for n in pipeline_names()]
    assert again.checkbox(key="ask_summary").value is True
    again.switch_page("pages/settings.py").run()
    assert again.selectbox(key="set_ask_pipeline").value == "macsql"
    assert again.toggle(key="set_ask_summary").value is True
    assert any("saved on this computer and come back after a reload" in c.value
               for c in again.caption)


def test_model_limits_and_pipeline_defaults_come_back_but_never_the_key(app, app_env):
    secret = "sk-not-for-the-store-987654321"
    app.switch_page("pages/settings.py").run()
    app.radio(key="set_provider").set_value("openai")
    app.text_input(key="set_base_url").input(app_env.base_url)
    app.text_input(key="set_model").input("scripted-model")
    app.text_input(key="set_api_key").input(secret)
    app.slider(key="set_temperature").set_value(0.4)
    button(app, "Save model settings").click().run()
    assert not app.exception and errors(app) == []
    [saved] = [s.value for s in app.success]
    assert saved.startswith("Saved: ") and "The API key is not saved" in saved
    app.number_input[0].set_value(2.5)
    app.number_input[1].set_value(50)
    button(app, "Save limits").click().run()
    app.get_by_key("set_param_macsql_max_refine").set_value(1)
    button(app, f"Save defaults for {LABELS['macsql']}").click().run()
    assert not app.exception and errors(app) == [] and not app.warning

    again = reloaded()
    overrides = again.session_state["llm_overrides"]
    assert "api_key" not in overrides
    assert (overrides["provider"], overrides["base_url"], overrides["model"],
            overrides["temperature"]) == ("openai", app_env.base_url, "scripted-model", 0.4)
    assert again.session_state["exec_limits"] == {"timeout": 2.5, "max_rows": 50}
    again.selectbox(key="ask_pipeline").select("macsql").run()
    assert again.get_by_key("ask_param_macsql_max_refine").value == 1
    with Store(default_path()) as store:
        kept = store.preferences()
    assert kept["pipeline.macsql"] == {"max_refine": 1}  # what differs from the defaults
    assert secret not in repr(kept)


def test_a_store_that_cannot_be_written_says_so_once(app, monkeypatch):
    def refuse(self, values, *, viewer=None):
        raise StoreError("Nothing can be saved: the folder is read-only.", UNWRITABLE)

    monkeypatch.setattr(PreferencesPart, "save_preferences", refuse)
    app.switch_page("pages/settings.py").run()
    app.selectbox(key="set_ask_pipeline").select("baseline")
    button(app, "Save Ask defaults").click().run()
    assert not app.exception and errors(app) == [] and not app.success
    [warning] = [w.value for w in app.warning]
    assert warning.startswith("Applied for this session, but not saved: Nothing can be saved")
    app.switch_page("pages/ask.py").run()
    assert app.selectbox(key="ask_pipeline").value == "baseline"  # applied all the same


def test_saved_settings_that_cannot_be_read_leave_the_defaults(app_env, monkeypatch):
    def fail(self, *, viewer=None):
        raise StoreError("The run store cannot be used just now: database is locked.")

    monkeypatch.setattr(PreferencesPart, "preferences", fail)
    at = reloaded()
    assert at.selectbox(key="ask_pipeline").value == "selection"
    at.switch_page("pages/settings.py").run()
    assert not at.exception and errors(at) == []
    assert any(w.value.startswith("Your saved settings could not be read") for w in at.warning)


@pytest.fixture
def two_analysts(app_env, monkeypatch, tmp_path):
    """Team mode with two analysts, ana and bo."""
    team_mode(monkeypatch, tmp_path, names=("ana", "bo"))
    return app_env


def test_in_team_mode_each_user_gets_their_own(two_analysts):
    ana = signed_in("ana")
    ana.switch_page("pages/settings.py").run()
    assert any("saved for Ana" in c.value for c in ana.caption)
    ana.selectbox(key="set_ask_pipeline").select("baseline")
    button(ana, "Save Ask defaults").click().run()
    assert not ana.exception and errors(ana) == [] and ana.success

    assert signed_in("ana").selectbox(key="ask_pipeline").value == "baseline"
    assert signed_in("bo").selectbox(key="ask_pipeline").value == "selection"
