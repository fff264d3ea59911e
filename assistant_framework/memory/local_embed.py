"""Optional local embedder: the static WordLlama model shipped inside the ``wordllama`` wheel.

No server and no download: the weights and tokenizer are read from the installed package
folder. Install with ``pip install '.[semantic]'``; BM25 search never needs this module.
"""

from __future__ import annotations

from pathlib import Path

EXTRA_HINT = "install the optional extra: pip install '.[semantic]' (package wordllama)"
MODEL_NAME = "wordllama-l2_supercat-256"


class LocalEmbedder:
    """``embed(texts) -> list[list[float]]`` backed by WordLlama, loaded with downloads disabled."""

    def __init__(self, dim: int = 256) -> None:
        try:
            import wordllama
        except ImportError:
            raise ImportError(f"local semantic search needs wordllama: {EXTRA_HINT}") from None
        # The wheel keeps weights/ and tokenizers/ next to the package; as cache_dir this
        # resolves both files locally (the tokenizer is only found under cache_dir/tokenizers).
        package_dir = Path(wordllama.__file__).resolve().parent
        try:
            self._model = wordllama.WordLlama.load(cache_dir=package_dir, dim=dim, disable_download=True)
        except FileNotFoundError as exc:
            raise RuntimeError(f"wordllama model files missing in {package_dir}: {exc}") from None
        self.model = f"wordllama-l2_supercat-{dim}"

    def __call__(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        # Empty strings would make the pooled vector NaN; a space embeds as the zero-ish vector.
        cleaned = [t if t.strip() else " " for t in texts]
        vectors: list[list[float]] = self._model.embed(cleaned, norm=True, return_np=True).astype(float).tolist()
        return vectors


def load_local_embedder(dim: int = 256) -> LocalEmbedder:
    """The WordLlama embedder from the installed package (ImportError naming the extra if absent)."""
    return LocalEmbedder(dim)
