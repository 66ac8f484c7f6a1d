"""Team mode for the app tests: a users file with the named users, and signing in as one of
them in a new browser session."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from agents.core import signin_limit, team

from app_helpers import APP, TIMEOUT, errors

PASSWORDS = {"ana": "ana-password-1", "bo": "bo-password-1", "root": "root-password-1"}


def team_mode(monkeypatch, tmp_path, names=tuple(PASSWORDS)) -> None:
    """Turn team mode on with a users file of ``names`` (``root`` an admin, the rest
    analysts) and a fresh sign-in limit."""
    users = tmp_path / "users.yaml"
    for name in names:
        team.add_user(name, PASSWORDS[name], role="admin" if name == "root" else "analyst",
                      name=name.title(), path=users)
    monkeypatch.setenv("STUDIO_MODE", "team")
    monkeypatch.setenv("STUDIO_USERS_FILE", str(users))
    monkeypatch.setattr(signin_limit, "LIMIT", signin_limit.SignInLimit(5, 900))


def sign_in(at: AppTest, user: str, password: str) -> None:
    fields = {t.label: t for t in at.text_input}
    fields["Username"].input(user)
    fields["Password"].input(password)
    [button] = [b for b in at.button if b.label == "Sign in"]
    button.click().run()


def signed_in(user: str) -> AppTest:
    """A new browser session, signed in as ``user``."""
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.run()
    sign_in(at, user, PASSWORDS[user])
    assert not at.exception and errors(at) == [], (at.exception, errors(at))
    return at
