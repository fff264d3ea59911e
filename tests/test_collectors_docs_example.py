"""The collector example in docs/collectors.md works as written (issue 17), and a ``config_schema``
that is not a schema (the old ``{...}``, a Python set) is a clear load error, not an AttributeError."""

from __future__ import annotations

import re
from pathlib import Path

from assistant_framework.collectors.loader import load_collector
from tests.fixtures.collectors.helpers import write_collector

REPO = Path(__file__).resolve().parents[1]
PRELUDE = """
def fetch(workspace, config):
    workspace.write_text("collectors/weather/today.md", "sunny in " + config.get("city", "?"))
    return {"summary": "ok"}


def setup(config, workspace):
    return 0

"""


def _docs_example() -> str:
    text = (REPO / "docs" / "collectors.md").read_text(encoding="utf-8")
    block = next(b for b in re.findall(r"```python\n(.*?)```", text, re.S) if "def register_collector" in b)
    return PRELUDE + block


def test_the_docs_example_loads_and_validates_its_section(tmp_path: Path) -> None:
    folder = write_collector(tmp_path, "weather", _docs_example())
    collector = load_collector(folder, {"enabled": True, "city": "Oslo"})
    assert getattr(collector, "error", None) is None, collector
    assert collector.config_schema["properties"]["city"] == {"type": "string"}
    wrong = load_collector(folder, {"enabled": True, "city": 42})
    assert "collectors.weather.city: 42 is not of type 'string'" in wrong.error


def test_a_set_or_invalid_config_schema_is_a_clear_load_error(tmp_path: Path) -> None:
    literal = _docs_example().replace('"config_schema": {', '"config_schema": {...} or {', 1)
    folder = write_collector(tmp_path, "weather", literal)
    failed = load_collector(folder, {})
    assert "config_schema must be a JSON Schema object" in failed.error and "set holding Ellipsis" in failed.error
    assert "AttributeError" not in failed.error
    bad = write_collector(
        tmp_path,
        "badschema",
        PRELUDE
        + """
def register_collector(config):
    return {"interval_seconds": 60, "run": lambda ws: None, "config_schema": {"type": "objekt"}}
""",
    )
    assert "config_schema is not a valid JSON Schema at type" in load_collector(bad, {}).error
