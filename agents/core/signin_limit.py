"""How many wrong passwords a username may be tried with before sign-in waits.

streamlit-authenticator counts failed attempts inside the credentials it was given, which the
studio reads afresh from the users file on every page run, so its counter never reaches a
limit; and once reached it would lock the account for good, which lets anyone lock anyone out.
This limit is the server process's: ``STUDIO_SIGNIN_ATTEMPTS`` wrong passwords (5) within
``STUDIO_SIGNIN_WINDOW_MINUTES`` (15) make that username wait until the oldest of them is that
old, for every browser alike. A username that does not exist is counted the same way, so the
wait tells nobody which accounts exist. A right password clears the count.
"""

from __future__ import annotations

import os
import threading
import time
from collections import defaultdict, deque

DEFAULT_ATTEMPTS = 5
DEFAULT_WINDOW_MINUTES = 15.0


def _setting(name: str, default: float, least: float) -> float:
    try:
        return max(least, float(os.environ.get(name, default)))
    except ValueError:
        return default


class SignInLimit:
    """Failed sign-ins per username over a sliding window; safe across threads."""

    def __init__(self, attempts: int | None = None, window_seconds: float | None = None,
                 clock=time.monotonic):
        self.attempts = int(attempts if attempts is not None else
                            _setting("STUDIO_SIGNIN_ATTEMPTS", DEFAULT_ATTEMPTS, 1))
        self.window = float(window_seconds if window_seconds is not None else
                            60 * _setting("STUDIO_SIGNIN_WINDOW_MINUTES",
                                          DEFAULT_WINDOW_MINUTES, 0.1))
        self._clock = clock
        self._failures: dict[str, deque] = defaultdict(deque)
        self._lock = threading.Lock()

    @staticmethod
    def _key(username: str | None) -> str:
        return (username or "").strip().lower()

    def _recent(self, key: str) -> deque:
        failures, now = self._failures[key], self._clock()
        while failures and now - failures[0] >= self.window:
            failures.popleft()
        return failures

    def wait(self, username: str | None) -> float:
        """Seconds before ``username`` may be tried again (0: now)."""
        with self._lock:
            failures = self._recent(self._key(username))
            if len(failures) < self.attempts:
                return 0.0
            return max(0.0, failures[0] + self.window - self._clock())

    def failed(self, username: str | None) -> None:
        with self._lock:
            self._recent(self._key(username)).append(self._clock())

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
