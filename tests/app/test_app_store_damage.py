"""A damaged store never takes the app down: it is moved aside with a banner on every page,
and History works on the fresh store."""

from __future__ import annotations

import os
import time

from streamlit.testing.v1 import AppTest

from agents.store import default_path

from app_helpers import APP, TIMEOUT, errors


def test_a_damaged_store_is_moved_aside_and_every_page_says_so(app_env):
    path = default_path()
    garbage = b"this is not a database at all" * 200
    path.write_bytes(garbage)
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.run()
    assert not at.exception and errors(at) == []
    [banner] = [w.value for w in at.warning if "could not be read" in w.value]
    assert "moved to" in banner and "a fresh store started" in banner
    [aside] = [p for p in path.parent.iterdir() if ".damaged-" in p.name]
    assert aside.read_bytes() == garbage
    at.switch_page("pages/history.py").run()
    assert not at.exception and errors(at) == []
    assert any("could not be read" in w.value for w in at.warning)
    assert any("No saved runs match" in i.value for i in at.info)


def test_an_empty_store_is_never_silently_replaced(app_env):
    path = default_path()
    path.write_bytes(b"")
    os.utime(path, (time.time() - 60, time.time() - 60))
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.run()
    assert not at.exception and errors(at) == []
    [banner] = [w.value for w in at.warning if "was empty (0 bytes)" in w.value]
    assert "are not in it" in banner and "copy a backup over" in banner
    assert [p.read_bytes() for p in path.parent.iterdir() if ".damaged-" in p.name] == [b""]
