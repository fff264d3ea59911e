"""The OpenAI-compatible ``POST {base_url}/embeddings`` client for semantic memory search.

It lives in the bot package because ``assistant_framework`` does no HTTP to model servers:
the runtime builds it from ``llm.embeddings`` and hands it to ``MemoryService(embed=...)``.
"""

from __future__ import annotations

import requests


class EmbeddingError(RuntimeError):
    """The embeddings endpoint failed or answered something unusable."""


class EmbeddingClient:
    """Calls ``{base_url}/embeddings``; config ``{"base_url", "model", "api_key", "timeout_seconds", "batch"}``."""

    def __init__(self, config: dict, session: requests.Session | None = None) -> None:
        if not config.get("base_url") or not config.get("model"):
            raise ValueError("llm.embeddings needs base_url and model")
        self.url = config["base_url"].rstrip("/") + "/embeddings"
        self.model = str(config["model"])
        self.timeout = float(config.get("timeout_seconds", 30))
        self.batch = int(config.get("batch", 64))
        self._headers = {"Authorization": f"Bearer {config['api_key']}"} if config.get("api_key") else {}
        self._session = session or requests.Session()

    def __call__(self, texts: list[str]) -> list[list[float]]:
        vectors: list[list[float]] = []
        for i in range(0, len(texts), self.batch):
            part = texts[i : i + self.batch]
            try:
                response = self._session.post(
                    self.url, json={"model": self.model, "input": part}, headers=self._headers, timeout=self.timeout
                )
            except requests.RequestException as exc:
                raise EmbeddingError(f"embeddings request to {self.url} failed: {type(exc).__name__}") from None
            if response.status_code != 200:
                raise EmbeddingError(f"embeddings endpoint {self.url} answered HTTP {response.status_code}")
            try:
                data = sorted(response.json()["data"], key=lambda d: d.get("index", 0))
                got = [list(map(float, d["embedding"])) for d in data]
            except (ValueError, KeyError, TypeError):
                raise EmbeddingError(f"embeddings endpoint {self.url} answered without data[].embedding") from None
            if len(got) != len(part):
                raise EmbeddingError(
                    f"embeddings endpoint {self.url} returned {len(got)} vectors for {len(part)} texts"
                )
            vectors.extend(got)
        return vectors


def embedding_client(llm_config: dict) -> EmbeddingClient | None:
    """The client for ``llm.embeddings`` when it is enabled, else None."""
    section = (llm_config or {}).get("embeddings") or {}
    return EmbeddingClient(section) if section.get("enabled") else None
