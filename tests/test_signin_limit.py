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


def test_tries_at_the_same_moment_are_counted_before_any_password_is_checked():
    import threading

    limit = SignInLimit(5, 60)
    allowed = []
    start = threading.Barrier(40)

    def attempt():
        start.wait()
        if limit.begin("ana") == 0:
            allowed.append(1)

    threads = [threading.Thread(target=attempt) for _ in range(40)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(allowed) == 5


def test_asking_costs_nothing_and_the_count_stays_bounded(monkeypatch):
    from agents.core import signin_limit

    now = [0.0]
    limit = SignInLimit(3, 60, clock=lambda: now[0])
    for n in range(1000):
        limit.wait(f"nobody-{n}")
    assert limit._failures == {}
    monkeypatch.setattr(signin_limit, "MAX_NAMES", 10)
    for n in range(25):
        now[0] = n
        limit.failed("x" * 10_000 + str(n))  # a huge name is counted by its first characters
        limit.failed(f"name-{n}")
    assert len(limit._failures) <= 10 and all(len(k) <= 256 for k in limit._failures)
    now[0] = 1000  # out of the window: a name's failures are forgotten when next asked
    assert limit.wait("name-24") == 0 and "name-24" not in limit._failures


def test_settings_out_of_range_fall_back_or_are_bounded(monkeypatch):
    monkeypatch.setenv("STUDIO_SIGNIN_ATTEMPTS", "inf")
    monkeypatch.setenv("STUDIO_SIGNIN_WINDOW_MINUTES", "nan")
    limit = SignInLimit()
    assert limit.attempts == 1000 and limit.window == 15 * 60
    monkeypatch.setenv("STUDIO_SIGNIN_ATTEMPTS", "many")
    assert SignInLimit().attempts == 5
