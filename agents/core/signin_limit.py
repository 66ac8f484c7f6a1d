"""How many wrong passwords a username may be tried with before sign-in waits.

streamlit-authenticator counts failed attempts inside the credentials it was given, which the
studio reads afresh from the users file on every page run, so its counter never reaches a
limit; and once reached it would lock the account for good, which lets anyone lock anyone out.
This limit is the server process's: ``STUDIO_SIGNIN_ATTEMPTS`` wrong passwords (5) within
``STUDIO_SIGNIN_WINDOW_MINUTES`` (15) make that username wait until the oldest of them is that
old, for every browser alike. A username that does not exist is counted the same way, so the
wait tells nobody which accounts exist. A right password clears the count.

A try is counted before its password is checked (:meth:`SignInLimit.begin`), under one lock, so
browsers trying at the same moment cannot all slip in before the first failure is recorded. The
count is per username only: anyone may keep one account waiting by failing on purpose (signing
in again by cookie still works), the price of not letting many addresses guess one password.
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque

DEFAULT_ATTEMPTS = 5
DEFAULT_WINDOW_MINUTES = 15.0
MAX_USERNAME = 256     # longer names are counted by their first characters
MAX_NAMES = 10_000     # names counted at once; the one failed longest ago is forgotten first


def _setting(name: str, default: float, least: float, most: float) -> float:
    try:
        value = float(os.environ.get(name, default))
    except (ValueError, OverflowError):
        return default
    return min(most, max(least, value)) if value == value else default  # NaN: the default


class SignInLimit:
    """Failed sign-ins per username over a sliding window; safe across threads."""

    def __init__(self, attempts: int | None = None, window_seconds: float | None = None,
                 clock=time.monotonic):
        self.attempts = int(attempts if attempts is not None else
                            _setting("STUDIO_SIGNIN_ATTEMPTS", DEFAULT_ATTEMPTS, 1, 1000))
        self.window = float(window_seconds if window_seconds is not None else
                            60 * _setting("STUDIO_SIGNIN_WINDOW_MINUTES",
                                          DEFAULT_WINDOW_MINUTES, 0.1, 24 * 60))
        self._clock = clock
        self._failures: dict[str, deque] = {}
        self._lock = threading.Lock()

    @staticmethod
    def _key(username: str | None) -> str:
        return (username or "").strip().lower()[:MAX_USERNAME]

    def _recent(self, key: str) -> deque | None:
        """The failures of ``key`` still in the window (None when there are none left)."""
        failures, now = self._failures.get(key), self._clock()
        while failures and now - failures[0] >= self.window:
            failures.popleft()
        if failures is not None and not failures:
            del self._failures[key]
            return None
        return failures

    def _wait(self, failures: deque | None) -> float:
        if failures is None or len(failures) < self.attempts:
            return 0.0
        return max(0.0, failures[0] + self.window - self._clock())

    def wait(self, username: str | None) -> float:
        """Seconds before ``username`` may be tried again (0: now)."""
        with self._lock:
            return self._wait(self._recent(self._key(username)))

    def begin(self, username: str | None) -> float:
        """Count a try of ``username`` before its password is checked, or, when it must wait,
        the seconds left (and nothing is counted). :meth:`succeeded` takes a right one back."""
        key = self._key(username)
        with self._lock:
            wait = self._wait(self._recent(key))
            if wait > 0:
                return wait
            if key not in self._failures and len(self._failures) >= MAX_NAMES:
                oldest = min(self._failures, key=lambda k: self._failures[k][-1])
                del self._failures[oldest]
            self._failures.setdefault(key, deque()).append(self._clock())
            return 0.0

    def failed(self, username: str | None) -> None:
        """Count a wrong password of ``username`` checked without :meth:`begin`."""
        if self.begin(username) > 0:
            return

    def succeeded(self, username: str | None) -> None:
        with self._lock:
            self._failures.pop(self._key(username), None)


def wait_words(seconds: float) -> str:
    """"3 minutes", "1 minute", "40 seconds": how long the page says to wait."""
    if seconds >= 90:
        return f"{round(seconds / 60)} minutes"
    if seconds >= 45:
        return "1 minute"
    whole = max(1, round(seconds))
    return f"{whole} second{'' if whole == 1 else 's'}"


LIMIT = SignInLimit()  # the server process's one count
