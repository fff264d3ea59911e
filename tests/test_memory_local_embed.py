"""The optional local WordLlama embedder (skipped when the 'semantic' extra is not installed)."""

from __future__ import annotations

import pytest

pytest.importorskip("wordllama")

from assistant_framework.memory.local_embed import load_local_embedder  # noqa: E402
from assistant_framework.memory.search import cosine  # noqa: E402


@pytest.fixture(scope="module")
def embed():
    return load_local_embedder()


def test_vectors_have_one_dimension_for_every_text(embed):
    texts = ["I adopted a puppy last week", "Pottery class on Saturday", "", "x" * 2000]
    vectors = embed(texts)
    assert len(vectors) == len(texts)
    assert {len(v) for v in vectors} == {256}
    assert all(isinstance(x, float) and x == x for v in vectors for x in v)  # no NaN, plain floats
    assert embed([]) == []
    assert embed.model == "wordllama-l2_supercat-256"


def test_similar_texts_score_higher_than_unrelated(embed):
    query, close, far = embed(
        ["We got a new dog recently", "I adopted a puppy last week", "Interest rates rose at the central bank"]
    )
    assert cosine(query, close) > cosine(query, far) + 0.1


def test_same_text_gives_the_same_vector(embed):
    a, b = embed(["Melanie paints sunsets", "Melanie paints sunsets"])
    assert cosine(a, b) == pytest.approx(1.0, abs=1e-6)
