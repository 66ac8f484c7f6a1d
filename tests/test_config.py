"""Settings precedence, provider defaulting, validation messages and key redaction."""

from __future__ import annotations

import logging

import pytest

from agents.core.config import Settings, SettingsError, load_settings

KEY = "sk-test-0123456789abcdefSECRET"


@pytest.fixture(autouse=True)
def no_user_config(tmp_path, monkeypatch):
    """``env={}`` falls back to ~/.text2sql-studio/config.toml: point ~ at an empty folder."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))


def write_config(tmp_path, text: str):
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_without_anything_configured_are_local():
    s = load_settings(env={})
    assert s.provider == "local" and s.local_variant == "1.5b"
    assert (s.temperature, s.max_tokens, s.n_ctx, s.threads) == (0.0, 1024, 8192, 2)
    assert s.resolved_model() == "qwen2.5-coder-1.5b-instruct-q4_k_m"


def test_an_api_key_or_base_url_makes_openai_the_default():
    assert load_settings(env={"OPENAI_API_KEY": KEY}).provider == "openai"
    s = load_settings(env={"OPENAI_BASE_URL": "http://localhost:11434/v1",
                           "STUDIO_MODEL": "llama3"})
    assert (s.provider, s.base_url, s.model) == ("openai", "http://localhost:11434/v1", "llama3")
    assert load_settings(env={"OPENAI_API_KEY": KEY}).resolved_model() == "gpt-4o-mini"


def test_explicit_provider_wins_over_the_key_heuristic():
    s = load_settings(env={"OPENAI_API_KEY": KEY, "STUDIO_PROVIDER": "local"})
    assert s.provider == "local"


def test_precedence_overrides_over_env_over_file_over_defaults(tmp_path):
    path = write_config(tmp_path, """
[llm]
model = "from-file"
temperature = 0.5
max_tokens = 300
request_timeout = 30
""")
    env = {"STUDIO_MODEL": "from-env", "STUDIO_TEMPERATURE": "0.2",
           "OPENAI_BASE_URL": "http://127.0.0.1:8000/v1"}
    s = load_settings(path, env=env, model="from-override", max_retries=None)
    assert s.model == "from-override"  # override > env
    assert s.temperature == 0.2  # env > file
    assert s.max_tokens == 300 and s.request_timeout == 30.0  # file > default
    assert s.max_retries == 3  # a None override is ignored
    assert s.provider == "openai"


def test_config_file_found_through_studio_home_and_studio_config(tmp_path):
    write_config(tmp_path, 'provider = "openai"\nbase_url = "http://h:1/v1"\n')
    assert load_settings(env={"STUDIO_HOME": str(tmp_path)}).base_url == "http://h:1/v1"
    other = tmp_path / "other.toml"
    other.write_text('[llm]\nlocal_variant = "0.5b"\n', encoding="utf-8")
    s = load_settings(env={"STUDIO_HOME": str(tmp_path), "STUDIO_CONFIG": str(other)})
    assert s.local_variant == "0.5b" and s.provider == "local"


def test_other_tables_in_the_config_file_are_left_alone(tmp_path):
    path = write_config(tmp_path, '[app]\ntheme = "dark"\n[llm]\ncache = false\n')
    assert load_settings(path, env={}).cache is False


def test_env_values_are_typed():
    s = load_settings(env={"STUDIO_MAX_TOKENS": "64", "STUDIO_LLM_CACHE": "off",
                           "STUDIO_REQUEST_TIMEOUT": "2.5", "STUDIO_JSON_MODE": "json_object",
                           "STUDIO_THREADS": "4", "STUDIO_LLM_CACHE_PATH": "/tmp/x.sqlite"})
    assert (s.max_tokens, s.cache, s.request_timeout, s.json_mode, s.threads, s.cache_path) == (
        64, False, 2.5, "json_object", 4, "/tmp/x.sqlite")


@pytest.mark.parametrize("env, fragment", [
    ({"STUDIO_MAX_TOKENS": "lots"}, "environment variable STUDIO_MAX_TOKENS: max_tokens must be "
                                    "a whole number, not 'lots'"),
    ({"STUDIO_LLM_CACHE": "maybe"}, "cache must be true or false"),
    ({"STUDIO_PROVIDER": "anthropic"}, "provider must be one of local, openai"),
    ({"STUDIO_LOCAL_VARIANT": "7b"}, "local_variant must be one of 1.5b, 0.5b"),
    ({"STUDIO_TEMPERATURE": "3"}, "temperature must be between 0 and 2"),
    ({"STUDIO_JSON_MODE": "xml"}, "json_mode must be one of"),
    ({"OPENAI_BASE_URL": "localhost:11434"}, "base_url must start with http://"),
    ({"STUDIO_REQUEST_TIMEOUT": "0"}, "request_timeout must be a positive number"),
])
def test_invalid_values_have_clear_messages(env, fragment):
    with pytest.raises(SettingsError) as info:
        load_settings(env=env)
    assert fragment in str(info.value)


def test_invalid_toml_and_unknown_keys_name_the_file(tmp_path):
    path = write_config(tmp_path, "[llm\nmodel = 1")
    with pytest.raises(SettingsError, match="is not valid TOML"):
        load_settings(path, env={})
    path = write_config(tmp_path, "[llm]\nmodle = 'x'\n")
    with pytest.raises(SettingsError, match=r"unknown setting\(s\) in \[llm\].*modle"):
        load_settings(path, env={})
    with pytest.raises(SettingsError, match="config file not found"):
        load_settings(tmp_path / "missing.toml", env={})


def test_unknown_override_is_rejected():
    with pytest.raises(SettingsError, match="unknown setting"):
        load_settings(env={}, modle="x")


def test_api_key_never_appears_in_repr_str_redacted_or_logs(caplog):
    s = load_settings(env={"OPENAI_API_KEY": KEY})
    assert s.api_key == KEY
    assert KEY not in repr(s) and KEY not in str(s) and KEY not in f"{s}"
    assert s.redacted()["api_key"] == "***CRET"
    assert KEY not in str(s.redacted())
    with caplog.at_level(logging.INFO):
        logging.getLogger("test").info("settings: %s", s)
    assert KEY not in caplog.text


def test_bad_api_key_type_in_file_does_not_echo_it(tmp_path):
    path = write_config(tmp_path, "[llm]\napi_key = ['sk-secret-in-a-list']\n")
    with pytest.raises(SettingsError) as info:
        load_settings(path, env={})
    assert "sk-secret" not in str(info.value)


def test_settings_constructed_directly_are_validated():
    with pytest.raises(SettingsError, match="max_retries must be 0 or more"):
        Settings(max_retries=-1)
    assert "embedded" in Settings().describe()
    assert "http://h:1/v1" in Settings(provider="openai", base_url="http://h:1/v1",
                                       model="m").describe()
