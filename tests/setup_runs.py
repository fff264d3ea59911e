"""What the tests of ``assistant setup`` share: the example config copied without its local layer, one setup run
by flags (nothing asked), a channel's setup (no Telegram, no test turn, the fake model server) with the
channel's own flags after the common ones, and the flags of a setup with Telegram only."""

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


def setup_by_flags(config: Path, workspace: Path, *flags: str) -> int:
    """``assistant setup --yes`` (nothing asked) on ``config`` and ``workspace`` with ``flags``: its exit code."""
    return main(["setup", "--yes", "--config", str(config), "--workspace", str(workspace), *flags])


def channel_setup(config: Path, tmp_path: Path, chat: FakeChatServer, *flags: str) -> int:
    """A channel's setup by its ``flags``, without Telegram or the test turn, on the fake model server."""
    return setup_by_flags(
        config,
        tmp_path / "ws",
        *("--no-telegram", "--no-test", "--base-url", chat.base_url, "--timezone", "UTC"),
        *flags,
    )


def telegram_flags(token: str, bot_api: str, chat: FakeChatServer) -> tuple[str, ...]:
    """Setup's flags for Telegram at ``bot_api`` (the owner's message awaited 5 s), without the test turn, on the
    fake model server."""
    telegram = ("--token", token, "--telegram-base-url", bot_api, "--wait", "5")
    return ("--no-test", *telegram, "--base-url", chat.base_url, "--timezone", "UTC")
