"""Team mode in the app: sign-in first, then each analyst sees their own and the team's shared
items only, cannot remove or replace another's, and the prompts get only the notes their user
may see. Two users are two AppTest sessions of one server process."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from agents.core import signin_limit
from agents.store import Store, Viewer, default_path
from scripted_llm import ScriptedLLM, prompt_text

from app_helpers import APP, TIMEOUT, errors, sqlite_bytes
from team_page import PASSWORDS, sign_in, signed_in, team_mode

TOP5 = "SELECT name, price FROM products ORDER BY price DESC LIMIT 5"


@pytest.fixture
def team_env(app_env, monkeypatch, tmp_path):
    team_mode(monkeypatch, tmp_path)
    return app_env


def sidebar_text(at: AppTest) -> str:
    return " ".join(c.value for c in at.sidebar.caption)


def upload(at: AppTest, tmp_path, name: str, rows: int) -> None:
    path_sql = ("CREATE TABLE pets (id INTEGER PRIMARY KEY, kind TEXT);"
                + "INSERT INTO pets (kind) VALUES ('cat');" * rows)
    data = sqlite_bytes(tmp_path, path_sql, name=f"{name}-{rows}-{id(at)}.sqlite")
    at.file_uploader[0].set_value((f"{name}.sqlite", data, "application/octet-stream")).run()
    assert not at.exception


def ask(at: AppTest, question: str) -> None:
    at.text_area(key="ask_question").input(question)
    at.selectbox(key="ask_pipeline").select("baseline")
    at.checkbox(key="ask_summary").uncheck()  # the scripted server answers the pipeline only
    at.run()
    at.button(key="ask_run_button").click().run()
    assert not at.exception, at.exception


def test_nothing_but_the_sign_in_page_until_a_user_signs_in(team_env):
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.run()
    assert not at.exception
    assert not [s for s in at.selectbox if s.key == "db_picker_ask"]
    assert [t.label for t in at.text_input] == ["Username", "Password"]
    with pytest.raises(ValueError, match="Known pages: \\['Sign in'\\]"):
        at.switch_page("pages/history.py")  # no other page exists for this session
    direct = AppTest.from_file(str(Path(APP).parent / "pages" / "history.py"),
                               default_timeout=TIMEOUT)
    direct.run()  # a page started on its own runs through app.py: the sign-in page again
    assert [t.label for t in direct.text_input] == ["Username", "Password"]
    assert not direct.dataframe and not direct.exception
    sign_in(at, "ana", "not-her-password")
    assert errors(at) == ["That username and password do not match an account."]
    sign_in(at, "ana", PASSWORDS["ana"])
    assert errors(at) == [] and not at.exception
    assert "Signed in as **Ana** (analyst)" in sidebar_text(at)
    at.switch_page("pages/ask.py").run()
    assert at.selectbox(key="db_picker_ask").value == "sample:shop"


def test_wrong_passwords_make_that_username_wait_in_every_browser(team_env, monkeypatch):
    now = [1000.0]
    monkeypatch.setattr(signin_limit, "LIMIT",
                        signin_limit.SignInLimit(3, 600, clock=lambda: now[0]))
    first = AppTest.from_file(APP, default_timeout=TIMEOUT)
    first.run()
    for _ in range(3):
        sign_in(first, "ana", "guess-guess")
        assert errors(first) == ["That username and password do not match an account."]
    sign_in(first, "ana", PASSWORDS["ana"])  # the right password, but too late
    assert errors(first) == ["Too many wrong passwords for this username: try again in "
                             "10 minutes."]
    assert not first.selectbox  # still the sign-in page
    other = AppTest.from_file(APP, default_timeout=TIMEOUT)
    other.run()
    sign_in(other, "ana", PASSWORDS["ana"])  # another browser waits the same
    assert errors(other)[0].startswith("Too many wrong passwords")
    for _ in range(3):  # a username nobody has is counted alike: the wait reveals nothing
        sign_in(other, "nobody", "guess-guess")
    sign_in(other, "nobody", "guess-guess")
    assert errors(other)[0].startswith("Too many wrong passwords")
    sign_in(other, "bo", PASSWORDS["bo"])  # other users are not held up
    assert errors(other) == [] and "Signed in as **Bo**" in sidebar_text(other)
    now[0] += 601
    sign_in(first, "ana", PASSWORDS["ana"])
    assert errors(first) == [] and "Signed in as **Ana**" in sidebar_text(first)


def test_a_users_file_that_cannot_be_used_is_one_message(team_env, monkeypatch, tmp_path):
    monkeypatch.setenv("STUDIO_USERS_FILE", str(tmp_path / "missing.yaml"))
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.run()
    assert not at.exception and not at.text_input
    [message] = errors(at)
    assert message.startswith("Team mode cannot start: team mode needs a users file at")
    monkeypatch.setenv("STUDIO_MODE", "teams")  # a typo never opens the studio without sign-in
    at.run()
    assert errors(at)[0].startswith("Team mode cannot start: STUDIO_MODE must be one of")


def test_uploads_are_private_until_shared_and_never_replaced_by_another(team_env, tmp_path):
    ana, bo = signed_in("ana"), signed_in("bo")
    upload(ana, tmp_path, "pets", 1)
    assert ana.selectbox(key="db_picker_ask").value == "upload:pets"
    bo.run()
    assert "pets (kept upload)" not in bo.selectbox(key="db_picker_ask").options

    upload(bo, tmp_path, "pets", 2)  # the same name, different data
    assert bo.selectbox(key="db_picker_ask").value == "upload:pets_2"
    assert any("kept as pets_2; nothing was replaced" in w.value.replace("\\", "")
               for w in bo.warning)
    with Store(default_path()) as store:
        owners = {e["name"]: (e["owner"], e["shared"]) for e in store.saved_databases()}
    assert owners == {"pets": ("ana", 0), "pets_2": ("bo", 0)}

    ana.run()
    ana.checkbox(key="saved_share_ask_pets").check().run()
    bo.run()
    assert "pets (kept upload)" in bo.selectbox(key="db_picker_ask").options
    assert bo.button(key="saved_remove_ask_pets").disabled
    assert not bo.button(key="saved_remove_ask_pets_2").disabled
    assert not [c for c in bo.checkbox if c.key == "saved_share_ask_pets"]


def test_notes_reach_the_prompts_of_the_users_who_may_see_them(team_env):
    ana, bo = signed_in("ana"), signed_in("bo")
    ana.switch_page("pages/knowledge.py").run()
    for title, shared in (("secret rule", False), ("team rule", True)):
        ana.text_input(key="kn_new_title").input(title)
        ana.text_area(key="kn_new_text").input(f"{title} text")
        ana.checkbox(key="kn_new_shared").set_value(shared)
        [b for b in ana.button if b.label == "Add note"][0].click().run()
        assert errors(ana) == []

    bo.switch_page("pages/knowledge.py").run()
    captions = " ".join(c.value for c in bo.caption)
    assert "team rule" in " ".join(t.value for t in bo.text_input)
    assert "secret rule" not in " ".join(t.value for t in bo.text_input)
    assert "ana's, shared with the team; only its owner or an admin changes it" in captions
    [note_id] = [t.key.split("_")[-1] for t in bo.text_input if t.value == "team rule"]
    assert bo.button(key=f"kn_remove_{note_id}").disabled

    bo.switch_page("pages/ask.py").run()
    team_env.push(f"```sql\n{TOP5}\n```")
    ask(bo, "Which products are premium?")
    prompt = prompt_text(team_env.requests[-1])
    assert "team rule text" in prompt and "secret rule" not in prompt
    [box] = [e for e in bo.expander if e.label == "Given to the agents besides the question"]
    assert "(note by ana)" in " ".join(m.value for m in box.markdown)

    team_env.push(f"```sql\n{TOP5}\n```")
    ana.switch_page("pages/ask.py").run()
    ask(ana, "Which products are premium?")
    assert "secret rule text" in prompt_text(team_env.requests[-1])


def test_runs_and_annotations_belong_to_the_signed_in_user(team_env):
    ana, bo = signed_in("ana"), signed_in("bo")
    team_env.push(f"```sql\n{TOP5}\n```")
    ask(ana, "Top five by price?")  # on a sample database: shared with the team by default
    run_id = ana.session_state["ask_run"].run_id
    with Store(default_path()) as store:
        info = store.run_info(run_id)
    assert (info["owner"], info["shared"]) == ("ana", 1)

    bo.switch_page("pages/history.py").run()
    bo.selectbox(key="hist_open").select(run_id).run()
    assert not [t for t in bo.text_input if t.label == "Your name"]
    assert not [b for b in bo.button if b.key == f"run_delete_{run_id}"]
    assert any("Run ana's, shared with the team" in c.value for c in bo.caption)

    ana.switch_page("pages/history.py").run()
    ana.selectbox(key="hist_open").select(run_id).run()
    ana.checkbox(key=f"run_shared_{run_id}").uncheck().run()
    bo.switch_page("pages/history.py").run()
    assert not [s for s in bo.selectbox if s.key == "hist_open"]
    assert any("No saved runs match" in i.value for i in bo.info)
    ana.button(key=f"run_delete_{run_id}").click().run()
    with Store(default_path()) as store:
        assert store.run_info(run_id) is None


def test_settings_offer_only_the_operators_endpoints_in_team_mode(team_env):
    """The key reproduction: a session asking for its own URL (here set in its state as a
    crafted request would) reaches the configured endpoint, never its listener."""
    with ScriptedLLM() as listener:
        ana = signed_in("ana")
        ana.switch_page("pages/settings.py").run()
        assert not [t for t in ana.text_input if t.key in ("set_base_url", "set_api_key")]
        assert ana.radio(key="set_provider").options == ["local", "openai"] or \
            list(ana.radio(key="set_provider").options) == [
                "Embedded model (runs on this machine, offline)", "OpenAI-compatible endpoint"]
        ana.session_state["llm_overrides"] = {"provider": "openai",
                                              "base_url": listener.base_url,
                                              "api_key": "typed-key"}
        ana.run()
        ana.button(key="set_test").click().run()
        assert errors(ana) == []
        assert listener.authorizations == []
        assert team_env.authorizations[-1] == "Bearer test-key"


def test_signing_out_forgets_the_session_and_the_next_user_starts_afresh(team_env, tmp_path):
    at = signed_in("ana")
    data = sqlite_bytes(tmp_path, "CREATE TABLE secrets (id INTEGER PRIMARY KEY);",
                        name="secrets.sqlite")
    at.checkbox(key="keep_upload_ask").uncheck().run()  # in this session's memory only
    at.file_uploader[0].set_value(("secrets.sqlite", data, "application/octet-stream")).run()
    at.text_area(key="ask_question").input("ana's question").run()
    [out] = [b for b in at.sidebar.button if b.label == "Sign out"]
    out.click().run()
    assert not at.exception and [t.label for t in at.text_input] == ["Username", "Password"]
    sign_in(at, "bo", PASSWORDS["bo"])
    assert not at.exception and "Signed in as **Bo**" in sidebar_text(at)
    assert "secrets (uploaded, this session only)" not in at.selectbox(
        key="db_picker_ask").options
    assert at.text_area(key="ask_question").value == ""


def test_a_run_given_a_private_note_is_not_shared(team_env):
    ana = signed_in("ana")
    with Store(default_path()) as store:
        store.add_note("shop", "premium means price above 100", "premium", shared=False,
                       viewer=Viewer("ana", "analyst", team=True))
    team_env.push(f"```sql\n{TOP5}\n```")
    ask(ana, "Which premium products are there?")
    run_id = ana.session_state["ask_run"].run_id
    with Store(default_path()) as store:
        assert store.run_info(run_id)["shared"] == 0  # its trace holds ana's private note
