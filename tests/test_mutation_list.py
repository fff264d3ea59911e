"""bench/mutation_list/ stays true to the code: every line a mutation changes occurs exactly once in its
file, the change changes something, and every test file it names exists. A refactor that moves a guard
fails here (and says which mutation), instead of an hour into `bench/mutations.py`."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import mutation_list  # noqa: E402
from mutation_list import MUTATIONS, area_of  # noqa: E402


def test_mutation_ids_are_unique():
    ids = [m.id for m in MUTATIONS]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)


def test_each_mutation_names_its_tests_in_one_tuple_and_a_reason_only_as_text():
    """A second tuple of test files passed after ``tests`` lands in ``equivalent``: the mutation then counts as
    equivalent (expected to survive) and runs without those tests."""
    wrong = [m.id for m in MUTATIONS if not isinstance(m.equivalent, str) or not isinstance(m.tests, tuple)]
    wrong += [m.id for m in MUTATIONS if not all(isinstance(name, str) for name in m.tests)]
    assert not wrong, wrong


@pytest.mark.parametrize("mutation", MUTATIONS, ids=lambda m: m.id)
def test_each_mutation_still_applies_to_one_line_and_names_existing_tests(mutation):
    text = (ROOT / mutation.path).read_text(encoding="utf-8")
    assert text.count(mutation.old) == 1, (
        f"{mutation.id}: update bench/mutation_list/{area_of(mutation.path)}.py for {mutation.path}"
    )
    assert mutation.new != mutation.old
    assert mutation.tests, mutation.id
    missing = [name for name in mutation.tests if not (ROOT / "tests" / name).is_file()]
    assert not missing, f"{mutation.id}: no such test file {missing}"


def test_each_mutation_is_in_the_file_of_its_area():
    """A new mutation goes into the area file of the package it changes (bench/mutation_list/__init__.py's
    AREAS), so the list stays findable and two branches adding mutations of different areas do not meet."""
    misplaced = []
    for name in sorted({area_of(m.path) for m in MUTATIONS}):
        area = getattr(mutation_list, name)
        misplaced += [f"{m.id} ({m.path}) is in {name}.py" for m in area.MUTATIONS if area_of(m.path) != name]
    assert len(MUTATIONS) == sum(len(getattr(mutation_list, a).MUTATIONS) for a in {area_of(m.path) for m in MUTATIONS})
    assert not misplaced, misplaced


def test_every_area_file_in_the_folder_is_read():
    """An area file is found by its name (a new channel's ``channel_<name>.py`` is named nowhere else): every file
    of bench/mutation_list/ but ``common.py`` gives its mutations, in the order of the files' names."""
    files = sorted(path.stem for path in (ROOT / "bench" / "mutation_list").glob("*.py"))
    assert list(mutation_list.AREA_FILES) == [name for name in files if name not in ("__init__", "common")]
    read = [m.id for name in mutation_list.AREA_FILES for m in getattr(mutation_list, name).MUTATIONS]
    assert [m.id for m in MUTATIONS] == read
