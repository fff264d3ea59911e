"""tests/rewrite_once.py: the xdist controller writes the test modules' rewritten-asserts caches that the
workers' imports then read (pytest's own reader takes them), once per source."""

from __future__ import annotations

from pathlib import Path

import pytest
from _pytest.assertion import rewrite

from tests.rewrite_once import modules_to_rewrite, rewrite_ahead

MODULE = "def test_sum():\n    total = 1 + 1\n    assert total == 3\n"


def _cache_of(fn: Path) -> Path:
    return rewrite.get_cache_dir(fn) / (fn.name[:-3] + rewrite.PYC_TAIL)


def test_the_cache_written_is_what_a_workers_import_reads(tmp_path: Path, pytestconfig: pytest.Config) -> None:
    module = tmp_path / "test_sample.py"
    module.write_text(MODULE, encoding="utf-8")
    assert rewrite_ahead(pytestconfig, [module]) == 1
    code = rewrite._read_pyc(module, _cache_of(module))  # what AssertionRewritingHook.exec_module reads first
    assert code is not None
    namespace: dict[str, object] = {}
    exec(code, namespace)
    with pytest.raises(AssertionError) as failed:
        namespace["test_sum"]()  # type: ignore[operator]
    assert "assert 2 == 3" in str(failed.value)  # the rewritten assert explains itself; a plain one says nothing


def test_a_cache_matching_its_source_is_kept_and_a_stale_one_written_again(
    tmp_path: Path, pytestconfig: pytest.Config
) -> None:
    module = tmp_path / "test_sample.py"
    module.write_text(MODULE, encoding="utf-8")
    assert rewrite_ahead(pytestconfig, [module, module]) == 1
    assert rewrite_ahead(pytestconfig, [module]) == 0
    module.write_text(MODULE.replace("== 3", "== 4"), encoding="utf-8")
    assert rewrite_ahead(pytestconfig, [module]) == 1
    namespace: dict[str, object] = {}
    exec(rewrite._read_pyc(module, _cache_of(module)), namespace)  # type: ignore[arg-type]
    with pytest.raises(AssertionError, match="assert 2 == 4"):
        namespace["test_sum"]()  # type: ignore[operator]


def test_the_modules_are_the_test_files_the_arguments_name(tmp_path: Path) -> None:
    (tmp_path / "tests" / "deep").mkdir(parents=True)
    for name in ("tests/test_a.py", "tests/deep/test_b.py", "tests/helper.py", "tests/c_test.py", "other/test_d.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("", encoding="utf-8")
    found = modules_to_rewrite(["tests", "other/test_d.py::test_x", "missing"], ["test_*.py"], tmp_path)
    assert [p.relative_to(tmp_path).as_posix() for p in found] == [
        "tests/deep/test_b.py",
        "tests/test_a.py",
        "other/test_d.py",
    ]
