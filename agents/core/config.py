"""Which model the studio talks to, and how: one ``Settings`` object for every entry point.

The app, the CLI and the evaluation harness all call :func:`load_settings`, so one config file or
one environment variable changes the model everywhere. Precedence, highest first: keyword
overrides (CLI flags, app widgets) > environment variables > the TOML config file > defaults.

With no API key and no base URL configured, the provider is ``local``: the embedded
Qwen2.5-Coder model served in-process, so the studio works offline out of the box.

The API key never appears in ``repr()``, :meth:`Settings.redacted` or error messages, because
settings end up in logs, run records and screenshots.
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

PROVIDERS = ("local", "openai")
LOCAL_VARIANTS = ("1.5b", "0.5b")
JSON_MODES = ("auto", "json_schema", "json_object", "none")
QUEUE_MODES = ("auto", "on", "off")
DECODING_MODES = ("standard", "ngram", "draft")  # the embedded server's (agents/llm/local_model.py)
DEFAULT_OPENAI_MODEL = "gpt-4o-mini"

# Environment variable for each setting. STUDIO_CACHE is taken (the cache *folder*, see
# agents.core.paths), hence STUDIO_LLM_CACHE for switching the response cache on or off.
ENV_VARS = {
    "provider": "STUDIO_PROVIDER",
    "base_url": "OPENAI_BASE_URL",
    "api_key": "OPENAI_API_KEY",
    "model": "STUDIO_MODEL",
    "local_variant": "STUDIO_LOCAL_VARIANT",
    "temperature": "STUDIO_TEMPERATURE",
    "max_tokens": "STUDIO_MAX_TOKENS",
    "request_timeout": "STUDIO_REQUEST_TIMEOUT",
    "stream": "STUDIO_STREAM",
    "first_token_timeout": "STUDIO_FIRST_TOKEN_TIMEOUT",
    "idle_timeout": "STUDIO_IDLE_TIMEOUT",
    "call_timeout": "STUDIO_CALL_TIMEOUT",
    "model_queue": "STUDIO_MODEL_QUEUE",
    "max_retries": "STUDIO_MAX_RETRIES",
    "retry_base_delay": "STUDIO_RETRY_BASE_DELAY",
    "json_mode": "STUDIO_JSON_MODE",
    "cache": "STUDIO_LLM_CACHE",
    "cache_path": "STUDIO_LLM_CACHE_PATH",
    "n_ctx": "STUDIO_N_CTX",
    "remote_context": "STUDIO_REMOTE_CONTEXT",
    "threads": "STUDIO_THREADS",
    "decoding": "STUDIO_DECODING",
    "sample_seed": "STUDIO_SAMPLE_SEED",
}


class SettingsError(ValueError):
    """A setting has an invalid value; the message names the setting, the value and the source."""


@dataclass
class Settings:
    provider: str = "local"
    base_url: str | None = None
    api_key: str | None = None
    model: str = ""
    local_variant: str = "1.5b"
    temperature: float = 0.0
    max_tokens: int = 1024
    # Quick requests (the model list) and, with stream = false, a whole answer.
    request_timeout: float = 120.0
    # Streamed answers: the first token may take as long as the prompt takes to read (a
    # 2.5k-token prompt can need minutes on a busy 2-core CPU), then tokens come steadily;
    # see agents/llm/stream.py.
    stream: bool = True
    first_token_timeout: float = 600.0
    idle_timeout: float = 60.0
    call_timeout: float = 1800.0
    model_queue: str = "auto"  # auto: one request at a time to a server on this machine
    max_retries: int = 3
    retry_base_delay: float = 0.5  # first pause of the SDK's backoff (its own default)
    json_mode: str = "auto"
    cache: bool = True
    cache_path: str | None = None
    n_ctx: int = 8192
    # The context assumed for a remote endpoint (provider openai or compatible), whose size the
    # studio cannot ask for: prompt budgets and schema retrieval use it instead of n_ctx, which
    # is the embedded server's own setting.
    remote_context: int = 128_000
    threads: int = 2
    # How the embedded server decodes (agents/llm/local_model.py): standard, ngram or draft.
    # bench/decoding.py replays the same requests in each mode; on a 2-core CPU neither
    # speculative mode was faster, and both changed some answers.
    decoding: str = "standard"
    # The seed a sampled request (temperature above 0) carries, so the same run samples the
    # same answers again; -1 sends none (the server draws its own).
    sample_seed: int = 0

    def __post_init__(self) -> None:
        _validate(self)

    def __repr__(self) -> str:
        body = ", ".join(f"{k}={v!r}" for k, v in self.redacted().items())
        return f"Settings({body})"

    __str__ = __repr__

    def redacted(self) -> dict[str, Any]:
        """All settings as a dict, safe to log or show: the API key is masked."""
        values = dataclasses.asdict(self)
        values["api_key"] = mask_secret(self.api_key)
        return values

    def resolved_model(self) -> str:
        """The model name requests carry ('' means: ask the endpoint which model it serves)."""
        if self.model:
            return self.model
        if self.provider == "local":
            return f"qwen2.5-coder-{self.local_variant}-instruct-q4_k_m"
        return "" if self.base_url else DEFAULT_OPENAI_MODEL

    def describe(self) -> str:
        """One line for the UI and the CLI: which model, where."""
        if self.provider == "local":
            return f"embedded {self.resolved_model()} (local, offline)"
        where = self.base_url or "https://api.openai.com/v1"
        return f"{self.resolved_model() or 'the served model'} at {where}"


def mask_secret(secret: str | None) -> str | None:
    """'***' plus the last 4 characters of a long key (enough to tell two keys apart)."""
    if not secret:
        return None
    return "***" + secret[-4:] if len(secret) >= 16 else "***"


def load_settings(config_path: str | os.PathLike | None = None,
                  env: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
    """Settings from overrides > environment > config file > defaults.

    ``config_path`` defaults to ``$STUDIO_CONFIG`` or ``$STUDIO_HOME/config.toml`` (a missing
    default file is fine; a missing explicit one is an error). Overrides whose value is ``None``
    are ignored, so CLI options that were not given can be passed straight through.
    """
    env = os.environ if env is None else env
    names = {f.name for f in dataclasses.fields(Settings)}
    unknown = sorted(set(overrides) - names)
    if unknown:
        raise SettingsError(f"unknown setting(s): {', '.join(unknown)}; known: "
                            f"{', '.join(sorted(names))}")

    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    path, explicit = _config_path(config_path, env)
    for key, value in _read_config_file(path, explicit).items():
        values[key] = value
        sources[key] = f"{key} in {path}"
    for key, var in ENV_VARS.items():
        raw = env.get(var)
        if raw is not None and raw.strip() != "":
            values[key] = raw.strip()
            sources[key] = f"environment variable {var}"
    for key, value in overrides.items():
        if value is not None:
            values[key] = value
            sources[key] = key

    if "provider" not in values:
        values["provider"] = "openai" if (values.get("api_key") or values.get("base_url")) \
            else "local"
    typed = {key: _coerce(key, value, sources.get(key, key)) for key, value in values.items()}
    return Settings(**typed)


def _config_path(config_path, env: Mapping[str, str]) -> tuple[Path, bool]:
    if config_path is not None:
        return Path(config_path).expanduser(), True
    if env.get("STUDIO_CONFIG"):
        return Path(env["STUDIO_CONFIG"]).expanduser(), True
    home = env.get("STUDIO_HOME") or Path.home() / ".text2sql-studio"
    return Path(home).expanduser() / "config.toml", False


def _read_config_file(path: Path, explicit: bool) -> dict[str, Any]:
    """LLM settings from the ``[llm]`` table of a TOML file (top-level keys are accepted too).

    Other tables belong to other parts of the studio and are left alone; an unknown key inside
    ``[llm]`` is an error, because a misspelt setting would otherwise be silently ignored.
    """
    if not path.is_file():
        if explicit:
            raise SettingsError(f"config file not found: {path}")
        return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise SettingsError(f"config file {path} is not valid TOML: {exc}") from None
    except OSError as exc:
        raise SettingsError(f"cannot read config file {path}: {exc.strerror or exc}") from None
    names = {f.name for f in dataclasses.fields(Settings)}
    found = {k: v for k, v in data.items() if k in names}
    llm = data.get("llm", {})
    if not isinstance(llm, dict):
        raise SettingsError(f"'llm' in {path} must be a table ([llm]), not a value")
    unknown = sorted(set(llm) - names)
    if unknown:
        raise SettingsError(f"unknown setting(s) in [llm] of {path}: {', '.join(unknown)}; "
                            f"known: {', '.join(sorted(names))}")
    found.update(llm)
    return found


_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def _coerce(key: str, value: Any, source: str) -> Any:
    """Turn a value from TOML or the environment into the field's type, with a clear error."""
    kind = {f.name: f.type for f in dataclasses.fields(Settings)}[key]
    try:
        if kind == "bool":
            if isinstance(value, bool):
                return value
            text = str(value).strip().lower()
            if text in _TRUE:
                return True
            if text in _FALSE:
                return False
            raise ValueError
        if kind == "int":
            if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
                raise ValueError
            return int(value)
        if kind == "float":
            if isinstance(value, bool):
                raise ValueError
            return float(value)
        if value is None:
            return None
        if not isinstance(value, (str, int, float)):
            raise ValueError
        return str(value)
    except (TypeError, ValueError):
        expected = {"bool": "true or false", "int": "a whole number",
                    "float": "a number"}.get(kind, "a text value")
        shown = "***" if key == "api_key" else repr(value)
        raise SettingsError(f"{source}: {key} must be {expected}, not {shown}") from None


def _validate(s: Settings) -> None:
    def bad(message: str) -> None:
        raise SettingsError(message)

    if s.provider not in PROVIDERS:
        bad(f"provider must be one of {', '.join(PROVIDERS)}, not {s.provider!r}")
    if s.local_variant not in LOCAL_VARIANTS:
        bad(f"local_variant must be one of {', '.join(LOCAL_VARIANTS)}, not {s.local_variant!r}")
    if s.json_mode not in JSON_MODES:
        bad(f"json_mode must be one of {', '.join(JSON_MODES)}, not {s.json_mode!r}")
    if s.base_url is not None and not s.base_url.startswith(("http://", "https://")):
        bad(f"base_url must start with http:// or https://, not {s.base_url!r}")
    if not 0.0 <= s.temperature <= 2.0:
        bad(f"temperature must be between 0 and 2, not {s.temperature}")
    if s.max_tokens < 1:
        bad(f"max_tokens must be at least 1, not {s.max_tokens}")
    if s.request_timeout <= 0:
        bad(f"request_timeout must be a positive number of seconds, not {s.request_timeout}")
    for name in ("first_token_timeout", "idle_timeout", "call_timeout"):
        if getattr(s, name) <= 0:
            bad(f"{name} must be a positive number of seconds, not {getattr(s, name)}")
    if s.model_queue not in QUEUE_MODES:
        bad(f"model_queue must be one of {', '.join(QUEUE_MODES)}, not {s.model_queue!r}")
    if s.max_retries < 0:
        bad(f"max_retries must be 0 or more, not {s.max_retries}")
    if s.retry_base_delay < 0:
        bad(f"retry_base_delay must be 0 or more seconds, not {s.retry_base_delay}")
    if s.n_ctx < 512:
        bad(f"n_ctx must be at least 512 tokens, not {s.n_ctx}")
    if s.remote_context < 512:
        bad(f"remote_context must be at least 512 tokens, not {s.remote_context}")
    if s.threads < 1:
        bad(f"threads must be at least 1, not {s.threads}")
    if s.sample_seed < -1:
        bad(f"sample_seed must be -1 (none) or a whole number from 0, not {s.sample_seed}")
    if s.decoding not in DECODING_MODES:
        bad(f"decoding must be one of {', '.join(DECODING_MODES)}, not {s.decoding!r}")
