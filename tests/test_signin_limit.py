"""The sign-in limit: a sliding window per username, cleared by a right password."""

from __future__ import annotations

from agents.core.signin_limit import SignInLimit, wait_words


def test_a_username_waits_after_too_many_wrong_passwords_until_the_oldest_is_old():
    now = [0.0]
    limit = SignInLimit(3, 60, clock=lambda: now[0])
    for second in (0, 10, 20):
        now[0] = second
        assert limit.wait("Ana") == 0
        limit.failed("ana")
    assert limit.wait(" ANA ") == 40  # the same username however it was typed
    assert limit.wait("bo") == 0
    now[0] = 60  # the first failure left the window
    assert limit.wait("ana") == 0
    limit.failed("ana")
    assert limit.wait("ana") == 10


def test_a_right_password_clears_the_count():
    limit = SignInLimit(2, 60, clock=lambda: 0.0)
    limit.failed("ana")
    limit.succeeded("ana")
    limit.failed("ana")
    assert limit.wait("ana") == 0


def test_the_wait_in_words():
    assert wait_words(600) == "10 minutes"
    assert wait_words(50) == "1 minute"
    assert wait_words(0.2) == "1 second" and wait_words(30) == "30 seconds"
