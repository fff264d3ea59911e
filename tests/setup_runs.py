"""What the tests of a channel's ``assistant setup`` share: the example config copied without its local layer,
and one setup run by flags (no terminal, no Telegram, no test turn, the fake model server) with the channel's
own flags after the common ones."""

from __future__ import annotations

import shutil
from pathlib import Path

from messaging_llm_bot.cli.main import main
from tests.fakes.chat_server import FakeChatServer

REPO = Path(__file__).resolve().parents[1]


def example_config(tmp_path: Path) -> Path:
    """``config/`` of the repository copied to ``tmp_path/config``, without its git-ignored local layer."""
    config = tmp_path / "config"
    shutil.copytree(REPO / "config", config, ignore=shutil.ignore_patterns("local"))
    return config


def channel_setup(config: Path, tmp_path: Path, chat: FakeChatServer, *flags: str) -> int:
    """``assistant setup --yes`` with the channel's ``flags``: its exit code."""
    return main(
        [
            *("setup", "--yes", "--no-telegram", "--no-test", "--config", str(config)),
            *("--workspace", str(tmp_path / "ws"), "--base-url", chat.base_url, "--timezone", "UTC"),
            *flags,
        ]
    )
