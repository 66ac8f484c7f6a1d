"""Team mode in a real browser: sign in, stay signed in across a reload (the library's signed
cookie), see only one's own and shared uploads, sign out. Screenshots under
``test-artifacts/screenshots/``."""

from __future__ import annotations

import sqlite3

import pytest

from conftest import idle, screenshot, start_app

pytestmark = pytest.mark.browser

PASSWORDS = {"ana": "ana-password-1", "bo": "bo-password-1"}


@pytest.fixture(scope="module")
def team_url(chromium_path, browser_llm, tmp_path_factory):
    from agents.core import team

    home = tmp_path_factory.mktemp("team_home")
    users = home / "users.yaml"
    for name, password in PASSWORDS.items():
        team.add_user(name, password, role="analyst", name=name.title(), path=users)
    yield from start_app(home, browser_llm, STUDIO_MODE="team", STUDIO_USERS_FILE=str(users))


def _sign_in(page, url: str, user: str) -> None:
    page.goto(url)
    page.get_by_label("Username").fill(user)
    page.get_by_role("textbox", name="Password").fill(PASSWORDS[user])
    page.get_by_role("button", name="Sign in").click()
    page.get_by_text(f"Signed in as {user.title()}").wait_for()
    idle(page)
    for _ in range(100):  # the sign-in cookie is written by a component, a moment later
        if any(c["name"] == "text2sql_studio_auth" for c in page.context.cookies()):
            break
        page.wait_for_timeout(100)


def test_sign_in_own_uploads_reload_and_sign_out(browser, team_url, tmp_path):
    ana = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    ana.set_default_timeout(30_000)
    try:
        _walk(browser, ana, team_url, tmp_path)
    except Exception:
        screenshot(ana, "FAILED-team-walk")
        raise


def _walk(browser, ana, team_url, tmp_path) -> None:
    ana.goto(team_url + "/history")  # any page's address shows the sign-in form first
    ana.get_by_label("Username").wait_for()
    assert ana.get_by_text("History & annotation").count() == 0
    screenshot(ana, "team-sign-in")

    _sign_in(ana, team_url, "ana")
    path = tmp_path / "pets.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript("CREATE TABLE pets (id INTEGER PRIMARY KEY, kind TEXT);"
                       "INSERT INTO pets (kind) VALUES ('cat');")
    conn.commit()
    conn.close()
    ana.locator("[data-testid=stFileUploader] input[type=file]").first.set_input_files(str(path))
    ana.get_by_text("Saved databases (1)").wait_for(timeout=90_000)  # a loaded machine
    idle(ana)
    screenshot(ana, "team-signed-in-ask")

    bo = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    _sign_in(bo, team_url + "/history", "bo")  # signed in on the page the address named
    # a rerun may still show the page's previous copy beside the new one: the first is enough
    bo.get_by_role("heading", name="History & annotation").first.wait_for()
    bo.goto(team_url)
    bo.get_by_text("Saved databases (0)").wait_for()  # ana's upload is private

    ana.goto(team_url + "/history")  # the signed cookie keeps the session signed in,
    ana.get_by_text("Signed in as Ana").wait_for()  # on the page the address names
    ana.get_by_role("heading", name="History & annotation").first.wait_for()
    idle(ana)
    ana.goto(team_url)
    ana.get_by_text("Saved databases (1)").wait_for()
    ana.get_by_role("button", name="Sign out").click()
    ana.get_by_label("Username").wait_for()
    idle(ana)
    assert ana.get_by_text("Saved databases").count() == 0
    assert ana.locator("[data-testid=stException]").count() == 0
    ana.reload()  # the cookie is gone: signed out for good
    ana.get_by_label("Username").wait_for()
    idle(ana)
    assert ana.get_by_text("Signed in as").count() == 0
    ana.context.close()
    bo.context.close()
