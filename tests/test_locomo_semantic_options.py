"""bench/locomo.py options for semantic fusion: conversation selection and the memory config."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

import locomo  # noqa: E402

SAMPLES = [{"sample_id": f"conv-{n}"} for n in (26, 30, 41)]


def test_select_by_name_keeps_file_order_and_limit_applies_after():
    assert [s["sample_id"] for s in locomo.select(SAMPLES, None, ["conv-41", "conv-26"])] == ["conv-26", "conv-41"]
    assert [s["sample_id"] for s in locomo.select(SAMPLES, 1, ["conv-41", "conv-30"])] == ["conv-30"]
    assert locomo.select(SAMPLES, 2, None) == SAMPLES[:2]


def test_select_names_unknown_conversations():
    with pytest.raises(ValueError, match="conv-99"):
        locomo.select(SAMPLES, None, ["conv-26", "conv-99"])


def test_semantic_weight_goes_into_memory_config_without_losing_other_keys():
    config = {"runtime": {"timezone": "UTC"}, "memory": {"ranking": {"segment_weight": 0.4}}}
    merged = locomo.with_semantic_weight(config, 0.2)
    assert merged["memory"] == {"ranking": {"segment_weight": 0.4}, "semantic_weight": 0.2}
    assert "semantic_weight" not in config["memory"]
    assert locomo.with_semantic_weight(None, 0.35)["memory"] == {"semantic_weight": 0.35}
    assert "memory" not in locomo.with_semantic_weight(None, None)
