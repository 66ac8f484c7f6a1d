"""Who the session is: nobody to ask in local mode, a signed-in user in team mode.

Team mode (``STUDIO_MODE=team``, :mod:`agents.core.team`) signs users in with
streamlit-authenticator, a maintained library: its form checks the password against the bcrypt
hash in the users file, and its signed cookie keeps the sign-in across reloads for the days the
file says. Until a session has signed in, ``app.py`` shows it the sign-in page and nothing else,
whatever page its URL names. Local mode is one person on localhost: no sign-in, and
:func:`viewer` is :data:`~agents.store.access.LOCAL`, who sees and changes everything.
"""

from __future__ import annotations

import bcrypt
import streamlit as st

from agents.core import team
from agents.core import signin_limit
from agents.store.access import ANALYST, LOCAL, Viewer
from ui.format import md_text

STATUS = "authentication_status"  # the library's session keys
USERNAME = "username"
NAME = "name"
ROLES = "roles"
_AUTHENTICATOR = "_studio_authenticator"
_ERROR = "_studio_sign_in_error"
_FORGET = "_studio_signed_out"
_COOKIE_AGAIN = "_studio_cookie_again"
_WAIT = "_studio_sign_in_wait"


def team_mode() -> bool:
    """Whether the server runs in team mode; an unknown ``STUDIO_MODE`` counts as team, so a
    typo never opens the studio without sign-in (:func:`gate` then says what is wrong)."""
    try:
        return team.mode() == "team"
    except team.TeamError:
        return True


def signed_in() -> bool:
    return bool(st.session_state.get(STATUS)) and bool(st.session_state.get(USERNAME))


def viewer() -> Viewer:
    """The user the store answers for in this session."""
    if not team_mode():
        return LOCAL
    if signed_in():
        return Viewer(str(st.session_state[USERNAME]), team.role_of(st.session_state.get(ROLES)),
                      team=True)
    return Viewer("", ANALYST, team=True)  # signed out: pages are not reachable anyway


def display_name() -> str | None:
    """The signed-in user's name as the users file gives it (team mode), else None."""
    if team_mode() and signed_in():
        return str(st.session_state.get(NAME) or st.session_state[USERNAME])
    return None


def _authenticator():
    """One authenticator per session, built from the users file as it is now (a user removed
    from the file cannot sign in again, though a session already open stays open)."""
    import streamlit_authenticator as stauth

    config = team.load_config()
    cookie = config["cookie"]
    authenticator = stauth.Authenticate(config["credentials"], str(cookie.get("name")),
                                        str(cookie["key"]), float(cookie.get("expiry_days", 7)),
                                        auto_hash=False)
    _limit_attempts(authenticator.authentication_controller.authentication_model)
    return authenticator


def _limit_attempts(model) -> None:
    """Every password the form checks goes through the process's sign-in limit
    (:mod:`agents.core.signin_limit`): a try is counted before its password is checked, and a
    username tried too often is refused without checking it, whatever browser tries it. A
    username with no account is checked against a stand-in hash, so it takes as long as a
    real one. A sign-in cookie is not a password and is not counted."""
    check = model.check_credentials

    def limited(username, password):
        limit = signin_limit.LIMIT
        wait = limit.begin(username)
        if wait > 0:
            st.session_state[_WAIT] = wait
            return False
        if username not in model.credentials.get("usernames", {}):
            _checks_like_a_real_account(password)
        right = check(username, password)
        if right:
            limit.succeeded(username)
        return right

    model.check_credentials = limited


_STAND_IN = bcrypt.hashpw(b"no account has this password", bcrypt.gensalt())


def _checks_like_a_real_account(password) -> None:
    bcrypt.checkpw(str(password or "").encode()[:72], _STAND_IN)


def ready() -> bool:
    """True when the pages may be shown: always in local mode; in team mode once the session
    has signed in (a valid sign-in cookie from an earlier visit counts, silently)."""
    if not team_mode():
        return True
    if st.session_state.get(_FORGET):
        _forget_the_session()
    st.session_state.pop(_ERROR, None)
    try:
        team.mode()
        authenticator = _authenticator()
    except team.TeamError as exc:
        st.session_state[_ERROR] = f"Team mode cannot start: {exc}"
        return False
    st.session_state[_AUTHENTICATOR] = authenticator
    if signed_in() and st.session_state.pop(_COOKIE_AGAIN, False):
        authenticator.cookie_controller.set_cookie()
    if not signed_in():
        try:
            authenticator.login(location="unrendered")  # a sign-in cookie from a visit before
        except Exception:  # e.g. the cookie of a user removed from the file since: sign in again
            for key in (STATUS, USERNAME, NAME, ROLES):
                st.session_state.pop(key, None)
    return signed_in()


def page() -> None:
    """The one page a signed-out session sees in team mode."""
    _, middle, _ = st.columns([1, 2, 1])
    with middle:
        st.title("Text-to-SQL Agent Studio")
        problem = st.session_state.get(_ERROR)
        if problem:
            st.error(problem)
            return
        st.caption("This studio is shared by a team: sign in with the account your "
                   "administrator gave you.")
        st.session_state[_AUTHENTICATOR].login(
            fields={"Form name": "Sign in", "Username": "Username", "Password": "Password",
                    "Login": "Sign in"}, key="studio_sign_in")
        if signed_in():
            # the pages at once; the sign-in cookie is written again in that run, which is not
            # cut short by a rerun (the browser may not have stored the one written here)
            st.session_state[_COOKIE_AGAIN] = True
            st.rerun()
        wait = st.session_state.pop(_WAIT, None)
        if wait:
            st.error("Too many wrong passwords for this username: try again in "
                     f"{signin_limit.wait_words(wait)}.")
        elif st.session_state.get(STATUS) is False:
            st.error("That username and password do not match an account.")


def sidebar() -> None:
    """Who is signed in, with a sign-out button (team mode only)."""
    if not team_mode() or st.session_state.get(_AUTHENTICATOR) is None or not signed_in():
        return
    st.caption(f"Signed in as **{md_text(display_name())}** ({viewer().role})")
    st.button("Sign out", key="studio_sign_out", on_click=_sign_out)


def _sign_out() -> None:
    """Sign out (the library forgets the sign-in and deletes its cookie) and forget everything
    else the session held, so the next person at this browser starts afresh. A callback: by
    the time the script runs the session is signed out, and app.py shows the sign-in page."""
    authenticator = st.session_state.get(_AUTHENTICATOR)
    if authenticator is not None and signed_in():
        authenticator.logout(location="unrendered")
    # forgotten when the script starts, after every callback of this click has run (another
    # widget's callback may still read its own value)
    st.session_state[_FORGET] = True


def _forget_the_session() -> None:
    keep = {_AUTHENTICATOR, STATUS, USERNAME, NAME, ROLES, "logout"}
    for key in [k for k in st.session_state if k not in keep]:
        del st.session_state[key]


def whose(row: dict) -> str:
    """"yours", "alice's" or "from before sign-in", and whether the team sees it (Markdown)."""
    owner = row.get("owner") or ""
    who = "yours" if owner and owner == viewer().user else \
        (f"{md_text(owner)}'s" if owner else "from before sign-in")
    return f"{who}, {'shared with the team' if row.get('shared') else 'private'}"
