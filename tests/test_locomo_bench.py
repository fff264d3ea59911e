"""The LoCoMo benchmark script on a one-conversation slice kept in tests/fixtures/locomo (see its README
for source and licence), and its download-once cache against a local HTTP server."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "fixtures" / "locomo" / "locomo_slice.json"
sys.path.insert(0, str(ROOT / "bench"))
import locomo  # noqa: E402

from tests.fakes.feed_server import StaticHTTPServer  # noqa: E402


def test_locomo_slice_json_shape_and_floor():
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "locomo.py"), "--data", str(DATA), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert set(result) == {"overall", "by_category", "ingest_turns_per_s", "query_ms_p50", "query_ms_p95", "questions"}
    assert set(result["overall"]) == {"turn_recall@5", "turn_recall@10", "session_recall@5"}
    assert set(result["by_category"]) == {"1", "2", "4", "5"}  # conv-30 has no category-3 question
    for row in [result["overall"], *result["by_category"].values()]:
        for key in ("turn_recall@5", "turn_recall@10", "session_recall@5"):
            assert 0.0 <= row[key] <= 1.0
    overall = result["overall"]
    assert overall["turn_recall@10"] >= overall["turn_recall@5"]
    # Sanity floor well under this slice's figures (0.65 / 0.90) and the plain-BM25 ones (0.55 / 0.87).
    assert overall["turn_recall@5"] > 0.45 and overall["session_recall@5"] > 0.75
    assert result["questions"] == 81  # the questions of categories 1-4 with evidence in conv-30
    assert result["questions"] == sum(
        result["by_category"][c]["questions"] for c in "1234" if c in result["by_category"]
    )
    assert result["ingest_turns_per_s"] > 0 and result["query_ms_p95"] >= result["query_ms_p50"] > 0


def test_evidence_normalisation_and_session_times():
    known = {"D8:6", "D9:17", "D11:26", "D30:5", "D1:3"}
    assert locomo.normalise_evidence(["D8:6; D9:17", "D:11:26", "D30:05", "D10:19", "D", "D1:3 D1:3"], known) == [
        "D8:6",
        "D9:17",
        "D11:26",
        "D30:5",
        "D1:3",
    ]
    assert locomo.parse_session_time("1:56 pm on 8 May, 2023").isoformat() == "2023-05-08T13:56:00+00:00"
    assert locomo.recall_at(["D1:1", "D1:2"], ["D1:2", "D3:1"], 5) == 0.5
    assert locomo.ranked_sessions(["D2:1", "D2:5", "D1:1"]) == ["D2", "D1"]


def test_bench_on_a_tiny_synthetic_file(tmp_path):
    sample = {
        "sample_id": "tiny",
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bob",
            "session_1_date_time": "9:00 am on 1 March, 2024",
            "session_1": [
                {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a greyhound called Pixel."},
                {"speaker": "Bob", "dia_id": "D1:2", "text": "Lovely, how old is she?"},
            ],
            "session_2_date_time": "6:00 pm on 9 April, 2024",
            "session_2": [
                {
                    "speaker": "Bob",
                    "dia_id": "D2:1",
                    "text": "I started learning the cello.",
                    "blip_caption": "a photo of a cello",
                },
                {"speaker": "Ann", "dia_id": "D2:2", "text": "Good luck with the lessons!"},
            ],
            "session_3_date_time": "1:00 pm on 1 May, 2024",
        },
        "qa": [
            {"question": "What dog did Ann adopt?", "answer": "a greyhound", "evidence": ["D1:1"], "category": 4},
            {"question": "When did Bob start the cello?", "answer": "April 2024", "evidence": ["D2:1"], "category": 2},
            {"question": "Unanswerable", "answer": "", "evidence": [], "category": 3},
        ],
    }
    data = tmp_path / "tiny.json"
    data.write_text(json.dumps([sample]))
    result = locomo.run(data)
    assert result["questions"] == 2
    assert result["overall"]["turn_recall@5"] == 1.0 and result["overall"]["session_recall@5"] == 1.0


def test_the_dataset_is_downloaded_once_into_the_cache_and_checked(tmp_path):
    body = DATA.read_bytes()
    digest = hashlib.sha256(body).hexdigest()
    with StaticHTTPServer() as server:
        server.add("/data/locomo10.json", body, content_type="application/json")
        url = server.url("/data/locomo10.json")
        first = locomo.ensure_dataset(url, tmp_path / "cache", digest)
        second = locomo.ensure_dataset(url, tmp_path / "cache", digest)
        assert first == second == tmp_path / "cache" / "locomo10.json" and first.read_bytes() == body
        assert len(server.requests_to("/data/locomo10.json")) == 1  # the second use reads the cache
        with pytest.raises(RuntimeError, match="expected 0000"):
            locomo.ensure_dataset(url, tmp_path / "other", "0000")
        assert not (tmp_path / "other").exists() or list((tmp_path / "other").iterdir()) == []
        with pytest.raises(RuntimeError, match="could not download the LoCoMo data from .*/missing.json"):
            locomo.ensure_dataset(server.url("/missing.json"), tmp_path / "other", digest)


def test_the_default_cache_folder_follows_xdg_cache_home(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert locomo.cache_dir() == tmp_path / "assistant-framework" / "locomo"
