"""Memory search finds words inside Chinese, Japanese, Korean and Thai running text (no spaces between words),
emoji, and German words written with ss for ß."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from assistant_framework.memory import MemoryService
from assistant_framework.memory.cjk import cjk_pieces, has_cjk
from assistant_framework.workspace import Workspace

UTC = timezone.utc


@pytest.fixture
def service(tmp_path):
    svc = MemoryService(Workspace(tmp_path / "ws"), {"runtime": {"timezone": "UTC"}}, start_worker=False)
    yield svc
    svc.close()


def _log(service, texts):
    for n, text in enumerate(texts):
        service.log_turn("c1", "user", text, time=datetime(2026, 5, 1, 9, n, tzinfo=UTC))


def test_japanese_chinese_and_korean_words_inside_sentences_are_found(service):
    _log(
        service,
        [
            "昨日は東京タワーに行きました。とても楽しかったです。",
            "明天我要去北京出差，下周回来。",
            "저는 서울에서 일하고 있어요.",
            "The dentist appointment is on Friday.",
        ],
    )
    assert "東京タワー" in service.search("東京タワー")[0].snippet
    assert "東京" in service.search("東京")[0].snippet  # two characters: the commonest word length
    assert "北京" in service.search("北京出差")[0].snippet
    assert "서울" in service.search("서울")[0].snippet
    assert "Friday" in service.search("dentist")[0].snippet
    assert service.search("大阪") == []


def test_cjk_rows_leave_the_index_with_their_file(service, tmp_path):
    service.index.workspace.write_text("notes/trip.md", "# 旅行\n\n京都で紅葉を見る予定。\n")
    service.index.refresh()
    assert service.search("紅葉")
    service.index.workspace.path("notes/trip.md").unlink()
    service.index.refresh()
    assert service.search("紅葉") == []


def test_query_pieces():
    assert has_cjk("東京") and not has_cjk("Tokyo")
    assert cjk_pieces("東京タワー and 北京") == (["東京タワー"], ["北京"])
    assert cjk_pieces("昨日は東京タワーに行きました")[0][:2] == ["昨日は", "日は東"]
    assert cjk_pieces("plain words") == ([], [])


def test_thai_words_emoji_and_ss_for_sharp_s_are_found(service):
    _log(
        service,
        [
            "ไปกินข้าวกับแม่ที่ร้านอาหารญี่ปุ่น",  # went to eat with mum at the Japanese restaurant
            "Ich wohne jetzt in der Hauptstraße 5",
            "friday is 🍕 night",
            "The dentist appointment is on Friday.",
        ],
    )
    assert "ร้านอาหาร" in service.search("ร้านอาหาร")[0].snippet  # "restaurant", inside the sentence
    assert "แม่" in service.search("แม่")[0].snippet  # "mum", three code points
    assert "🍕" in service.search("🍕")[0].snippet
    for spelling in ("Hauptstrasse", "HAUPTSTRASSE", "hauptstraße"):
        assert "Hauptstraße" in service.search(spelling)[0].snippet, spelling
    assert service.search("ญี่ปุ่นมาก")[0].snippet.startswith("ไปกิน")  # overlapping trigrams of a long run
    assert not any("ไป" in h.snippet for h in service.search("สวัสดี"))  # a Thai word that is not there
