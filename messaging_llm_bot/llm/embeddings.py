"""The OpenAI-compatible ``POST {base_url}/embeddings`` client for semantic memory search.

It lives in the bot package because ``assistant_framework`` does no HTTP to model servers:
the runtime builds it from ``llm.embeddings`` and hands it to ``MemoryService(embed=...)``.
"""

from __future__ import annotations

import requests

from assistant_framework.config.settings import EmbeddingsSettings
from assistant_framework.http_deadline import BodyTooLarge, DeadlineExceeded, bounded_request, deadline_session

#: An embeddings answer larger than this is refused (a batch of 64 vectors of 4,096 floats is ~6 MB).
MAX_ANSWER_BYTES = 64 * 1024 * 1024


class EmbeddingError(RuntimeError):
    """The embeddings endpoint failed or answered something unusable."""


class EmbeddingClient:
    """Calls ``{base_url}/embeddings`` as the ``llm.embeddings`` record says.

    ``timeout_seconds`` bounds each batch's whole exchange (a trickling answer ends there too)."""

    def __init__(self, settings: EmbeddingsSettings, session: requests.Session | None = None) -> None:
        if not settings.base_url or not settings.model:
            raise ValueError("llm.embeddings needs base_url and model")
        self.url = settings.base_url.rstrip("/") + "/embeddings"
        self.model = settings.model
        self.timeout = settings.timeout_seconds
        self.batch = settings.batch
        self._headers = {"Authorization": f"Bearer {settings.api_key}"} if settings.api_key else {}
        self._session = session or deadline_session()

    def __call__(self, texts: list[str]) -> list[list[float]]:
        vectors: list[list[float]] = []
        for i in range(0, len(texts), self.batch):
            part = texts[i : i + self.batch]
            try:
                response = bounded_request(
                    self._session,
                    "POST",
                    self.url,
                    seconds=self.timeout,
                    max_bytes=MAX_ANSWER_BYTES,
                    json={"model": self.model, "input": part},
                    headers=self._headers,
                    allow_redirects=False,  # the texts (memory) go to base_url only, as the chat's do
                )
            except DeadlineExceeded:
                raise EmbeddingError(
                    f"embeddings endpoint {self.url} did not finish within {self.timeout:g} s"
                ) from None
            except BodyTooLarge:
                raise EmbeddingError(f"embeddings endpoint {self.url} answered more than 64 MB") from None
            except (requests.RequestException, OSError) as exc:
                raise EmbeddingError(f"embeddings request to {self.url} failed: {type(exc).__name__}") from None
            if response.status != 200:
                raise EmbeddingError(f"embeddings endpoint {self.url} answered HTTP {response.status}")
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


def embedding_client(settings: EmbeddingsSettings) -> EmbeddingClient | None:
    """The client for ``llm.embeddings`` when it is enabled, else None."""
    return EmbeddingClient(settings) if settings.enabled else None
