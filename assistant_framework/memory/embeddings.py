"""Optional semantic search: an OpenAI-compatible ``POST {base_url}/embeddings`` client and
a similarity function whose vectors are cached in the index, keyed by text hash and model."""

from __future__ import annotations

import hashlib
import logging
from array import array
from typing import Callable

import requests

from .index import MemoryIndex
from .search import Candidate, cosine

log = logging.getLogger(__name__)
Embed = Callable[[list[str]], list[list[float]]]


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
                raise EmbeddingError(f"embeddings endpoint {self.url} returned {len(got)} vectors for {len(part)} texts")
            vectors.extend(got)
        return vectors


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def cached_embed(index: MemoryIndex, embed: Embed, model: str, texts: list[str]) -> list[list[float]]:
    """Vectors for texts, embedding only those not cached yet (each text once per model)."""
    hashes = [text_hash(t) for t in texts]
    cached = index.cached_vectors(list(set(hashes)), model)
    missing = {h: t for h, t in zip(hashes, texts) if h not in cached}
    if missing:
        keys = list(missing)
        fresh = embed([missing[k] for k in keys])
        rows = [(k, array("f", v).tobytes()) for k, v in zip(keys, fresh)]
        index.store_vectors(rows, model)
        cached.update(rows)
    return [array("f", cached[h]).tolist() for h in hashes]


def make_similarity(index: MemoryIndex, embed: Embed, model: str) -> Callable[[str, list[Candidate]], dict[int, float]]:
    """A similarity function for ``search``: cosine of query and candidate vectors; {} on failure."""

    def similarity(query: str, candidates: list[Candidate]) -> dict[int, float]:
        try:
            vectors = cached_embed(index, embed, model, [query] + [c.text for c in candidates])
        except Exception as exc:  # semantic search is optional: fall back to BM25 alone
            log.warning("semantic search skipped: %s", exc)
            return {}
        q = vectors[0]
        return {c.id: cosine(q, v) for c, v in zip(candidates, vectors[1:])}

    return similarity
