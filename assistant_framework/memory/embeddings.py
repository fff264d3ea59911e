"""Optional semantic search: a similarity function whose vectors are cached in the index, keyed
by text hash and model. The embedding function comes from the host (the bot's HTTP client in
``messaging_llm_bot/embeddings.py``, or ``local_embed.py``)."""

from __future__ import annotations

import hashlib
import logging
from array import array
from collections.abc import Callable

from .index import MemoryIndex
from .search import Candidate, cosine

log = logging.getLogger(__name__)
Embed = Callable[[list[str]], list[list[float]]]


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def cached_embed(index: MemoryIndex, embed: Embed, model: str, texts: list[str]) -> list[list[float]]:
    """Vectors for texts, embedding only those not cached yet (each text once per model)."""
    hashes = [text_hash(t) for t in texts]
    cached = index.cached_vectors(list(set(hashes)), model)
    missing = {h: t for h, t in zip(hashes, texts, strict=False) if h not in cached}
    if missing:
        keys = list(missing)
        fresh = embed([missing[k] for k in keys])
        rows = [(k, array("f", v).tobytes()) for k, v in zip(keys, fresh, strict=False)]
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
        return {c.id: cosine(q, v) for c, v in zip(candidates, vectors[1:], strict=False)}

    return similarity
