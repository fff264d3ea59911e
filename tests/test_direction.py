"""Which direction characters a page shows as marks (assistant_framework/direction.py): every control, and a mark
(LRM, RLM, ALM) with no letter of its direction near it on its line; right-to-left writing keeps the marks it puts
beside its letters. The pages themselves are checked in Chromium (tests/test_web_direction.py)."""

from __future__ import annotations

import pytest

from assistant_framework.direction import FEW, NEAR, marked

LRM, RLM, ALM = "\u200e", "\u200f", "\u061c"


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        # Among Latin words and digits a mark only reorders: "pay 300 200 100", "05-12-2024".
        (f"pay {RLM}100 200 300 now", "pay ‹U+200F›100 200 300 now"),
        (f"due {ALM}2024-12-05", "due ‹U+061C›2024-12-05"),
        (f"notes/report{RLM} 1 2 3.md", "notes/report‹U+200F› 1 2 3.md"),
        (RLM, "‹U+200F›"),
        # Among Hebrew letters only, an LRM puts digits in the order a right-to-left reader does not expect.
        (f"בין 5{LRM}-10 שקל", "בין 5‹U+200E›-10 שקל"),
        # A letter on another line, or farther than NEAR, does not place it.
        (f"שלום\n{RLM}1 2", "שלום\n‹U+200F›1 2"),
        ("א" + " " * NEAR + RLM, "א" + " " * NEAR + "‹U+200F›"),
        # Controls are shown whatever is beside them.
        (f"א\u202e{RLM}א", f"א‹U+202E›{RLM}א"),
    ],
)
def test_a_mark_away_from_letters_of_its_direction_is_shown(text, shown):
    assert marked(text) == shown


@pytest.mark.parametrize(
    "text",
    [
        f"שלום!{RLM}",  # after the punctuation that ends a Hebrew sentence
        f"C++{LRM} הוא",  # after a Latin word in a Hebrew one
        f"{RLM}5 תפוחים",  # before a number that starts a Hebrew line
        f"مرحبا {ALM}2024",  # an Arabic letter mark beside Arabic
        "א" + " " * (NEAR - 1) + RLM,
        f"x_{RLM}א{LRM}{ALM}b",  # each of a run by its own direction
    ],
)
def test_right_to_left_writing_keeps_its_marks(text):
    assert marked(text) == text


def test_text_made_of_marks_has_each_shown():
    """More than FEW marks, more than one in 16 characters: each shown without looking for its letters."""
    assert marked(f"א{RLM}" * (FEW + 1)) == "א‹U+200F›" * (FEW + 1)
    assert marked(f"א{RLM}" * FEW) == f"א{RLM}" * FEW
