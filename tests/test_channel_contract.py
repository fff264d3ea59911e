"""The channel contract (channels/contract.py, docs/channels.md): its records are typed data, every channel's
declared capabilities are what its own code does, and every registered channel has its hooks and its entry.

What every channel passes through its real service (a message in, one reply out; an ``ask``; strangers; streams;
media; a restart; busy modes; reminders and notices) is the contract's test kit, tests/channel_kit.py, run on
groups of channels by tests/test_channel_kit_*.py; the last test here checks that every channel is in exactly one.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import typing
from pathlib import Path

import pytest

from messaging_llm_bot.channels import contract
from messaging_llm_bot.channels.contract import Capabilities
from messaging_llm_bot.conversation.routes import ROUTES, Route
from tests.channel_kit import CHANNELS, MEASURE, ChannelKit

RECORDS = [
    contract.Capabilities,
    contract.Address,
    contract.Sender,
    contract.Media,
    contract.Incoming,
    contract.Sent,
    contract.OutgoingFile,
    contract.TextOut,
    contract.RunOptions,
]


def _loose(hint: object) -> list[str]:
    """The parts of a type hint that are untyped JSON: Any, or a dict of any kind."""
    if hint is typing.Any:
        return ["Any"]
    origin = typing.get_origin(hint)
    found = ["dict"] if hint is dict or origin is dict else []
    for arg in typing.get_args(hint):
        found += _loose(arg)
    return found


@pytest.mark.parametrize("record", RECORDS, ids=lambda r: r.__name__)
def test_a_contract_record_is_a_frozen_dataclass_without_loose_json(record: type) -> None:
    assert dataclasses.is_dataclass(record)
    assert record.__dataclass_params__.frozen  # type: ignore[attr-defined]
    hints = typing.get_type_hints(record, vars(contract))
    loose = {name: _loose(hint) for name, hint in hints.items() if _loose(hint)}
    assert loose == {}


def test_the_channel_protocol_takes_and_gives_only_contract_records() -> None:
    methods = [name for name in dir(contract.Channel) if not name.startswith("_")]
    assert {"start", "stop", "send_text", "edit_text", "typing", "send_file", "fetch", "ask_yes_no"} <= set(methods)
    for name in methods:
        member = getattr(contract.Channel, name)
        target = member.fget if isinstance(member, property) else member
        hints = typing.get_type_hints(target, vars(contract))
        assert not [h for h in hints.values() if _loose(h)], name


def test_capabilities_refuse_a_limit_below_one_and_unknown_media() -> None:
    with pytest.raises(ValueError, match="max_message_length"):
        Capabilities(max_message_length=0)
    with pytest.raises(ValueError, match="unknown media kinds"):
        Capabilities(max_message_length=10, media_in=frozenset({"hologram"}))  # type: ignore[arg-type]


@pytest.mark.parametrize("channel", CHANNELS)
def test_a_long_reply_is_split_to_the_declared_limit_and_nothing_is_lost(channel: str) -> None:
    capabilities, split = CHANNELS[channel]()
    measure = MEASURE[capabilities.length_unit]
    # Wide characters (an emoji is 2 UTF-16 units and 4 UTF-8 bytes) and bold spans across the cut points.
    line = "**Paris** 🗼 ist die Hauptstadt — 東京 is far away."
    count = min(3 * capabilities.max_message_length // measure(line) + 1, 5_000)
    reply = "\n".join(f"{n}. {line}" for n in range(count))
    parts = split(reply)
    assert all(measure(part) <= capabilities.max_message_length for part in parts)
    if measure(reply) > capabilities.max_message_length:
        assert len(parts) > 1
    # Every word arrives once, in order (whitespace at the cuts may go).
    assert "".join("".join(parts).split()) == "".join(reply.replace("**", "").split())


@pytest.mark.parametrize("channel", CHANNELS)
def test_a_channel_declares_its_capabilities_in_the_contracts_terms(channel: str) -> None:
    capabilities, _split = CHANNELS[channel]()
    assert isinstance(capabilities, Capabilities)
    assert capabilities.length_unit in MEASURE
    assert capabilities.media_in <= set(contract.MEDIA_KINDS)


# -- registration: one Route line and the channel's own files --------------------------------------------


def test_the_doctor_and_setup_find_each_channels_hooks_in_its_folder() -> None:
    """ops/setup and ops/doctor name no channel (tests/test_layout.py): the doctor's checks and setup's steps are
    found by the registry's names in ops/channels/<name>/doctor.py and setup.py, with the hooks' signatures."""
    from messaging_llm_bot.conversation.routes import channel_names
    from messaging_llm_bot.ops.channels.doctor import channel_checks
    from messaging_llm_bot.ops.channels.setup import channel_setups

    checks = dict(channel_checks())
    assert {"telegram", "signal", "email", "matrix", "webchat"} <= set(checks) <= set(channel_names())
    assert all(list(inspect.signature(check).parameters) == ["ctx"] for check in checks.values())
    setups = {hooks.channel: hooks for hooks in channel_setups()}
    assert {"telegram", "email", "matrix"} <= set(setups) <= set(channel_names())
    for hooks in setups.values():
        assert list(inspect.signature(hooks.add_arguments).parameters) == ["parser"]
        assert list(inspect.signature(hooks.steps).parameters) == ["setup"]


def test_the_configured_channels_pages_are_mounted_from_their_entry() -> None:
    """``assistant run`` mounts a channel's page through the registry (its entry's ``web_mount``), not by name:
    the Chat page when the web chat is configured, nothing when it is not."""
    from types import SimpleNamespace

    from assistant_framework.config.settings import Settings
    from messaging_llm_bot.channels.run import web_mounts

    def mounted(web: dict[str, object]) -> list[str]:
        runtime = SimpleNamespace(settings=Settings.from_config({"web": web}))
        return [str(route[0]) for mount in web_mounts(runtime) for route in mount(SimpleNamespace())]

    assert "/chat/?" in mounted({"enabled": True, "chat": True})
    assert mounted({"enabled": True, "chat": False}) == []


@pytest.mark.parametrize("route", ROUTES, ids=lambda r: r.channel)
def test_every_registered_channel_has_an_entry_the_run_can_start(route: Route) -> None:
    """``assistant run`` starts a channel from its Route alone: its folder's entry.py has ``runner`` (the
    terminal chat's too: ``--frontend console`` starts it so), and the name is one of ``--frontend``'s choices."""
    from messaging_llm_bot.channels.run import runner_factory
    from messaging_llm_bot.cli.run import build_parser

    [frontend] = [a for a in build_parser()._actions if a.dest == "frontend"]
    assert route.channel in (frontend.choices or ())
    factory = runner_factory(route.channel)
    assert list(inspect.signature(factory).parameters) == ["runtime", "options"]
    assert inspect.signature(factory).return_annotation in ("ChannelRunner", contract.ChannelRunner)


def test_each_route_has_a_name_and_a_prefix_of_its_own() -> None:
    """A Route copied from another and not changed everywhere would take that channel's chats: every name is
    one route's, and a chat id under a route's prefix is that route's channel (no prefix starts another)."""
    from messaging_llm_bot.conversation.routes import channel_of

    names = [route.channel for route in ROUTES]
    assert len(set(names)) == len(names), names
    for route in ROUTES:
        chat = f"{route.prefix}42" if route.prefix.endswith(":") else route.prefix
        assert channel_of(chat) == route.channel, (route.prefix, channel_of(chat))
        others = [other.prefix for other in ROUTES if other is not route]
        assert not [other for other in others if other.startswith(route.prefix)], route.prefix


def test_a_route_whose_folder_is_missing_is_said_in_one_line_naming_both(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A registry line whose name has no folder under channels/ (a typo, a folder not created yet): every command
    (the command line reads each channel's setup flags, the config each channel's section) says which Route and
    which folder in one line, no traceback; the run refuses to start it the same way."""
    from messaging_llm_bot.channels import RegistrationError
    from messaging_llm_bot.channels.run import runner_factory
    from messaging_llm_bot.cli.main import build_parser, main
    from messaging_llm_bot.conversation import routes

    monkeypatch.setattr(routes, "ROUTES", (*routes.ROUTES, routes.section_route("nowhere", "nw:")))
    monkeypatch.delenv("ASSISTANT_DEBUG", raising=False)
    build_parser.cache_clear()  # built once per process: with the registry as it is now
    try:
        (tmp_path / "config.json").write_text("{}", encoding="utf-8")
        assert main(["config", "validate", "--config", str(tmp_path / "config.json")]) == 2  # as a config error
    finally:
        build_parser.cache_clear()
    err = capsys.readouterr().err
    assert "conversation/routes.py registers the channel 'nowhere'" in err and "channels/nowhere/" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    with pytest.raises(RegistrationError, match="channels/nowhere/"):
        runner_factory("nowhere")


def test_a_setup_or_doctor_folder_no_route_names_is_said_in_one_line_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A channel's setup and doctor live in ops/channels/<name>/, apart from its folder under channels/: a folder
    there whose name no Route has (a typo: "telgram") would never run, so every command refuses it in one line
    naming the folder, and the doctor's and setup's finders raise it."""
    from messaging_llm_bot.channels import RegistrationError
    from messaging_llm_bot.cli.main import build_parser, main
    from messaging_llm_bot.ops import channels as ops_channels
    from messaging_llm_bot.ops.channels.doctor import channel_checks

    stray = tmp_path / "telgram"
    stray.mkdir()
    (stray / "__init__.py").write_text("", encoding="utf-8")
    (stray / "doctor.py").write_text("def checks(ctx):\n    return []\n", encoding="utf-8")
    monkeypatch.setattr(ops_channels, "__path__", [*ops_channels.__path__, str(tmp_path)])
    monkeypatch.delenv("ASSISTANT_DEBUG", raising=False)
    build_parser.cache_clear()  # built once per process: with the folders as they are now
    try:
        (tmp_path / "config.json").write_text("{}", encoding="utf-8")
        assert main(["config", "validate", "--config", str(tmp_path / "config.json")]) == 2
    finally:
        build_parser.cache_clear()
    err = capsys.readouterr().err
    assert "messaging_llm_bot/ops/channels/telgram/ is no registered channel's" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    with pytest.raises(RegistrationError, match="ops/channels/telgram/"):
        channel_checks()


def test_every_channel_runs_the_kit_in_exactly_one_module() -> None:
    """The kit's cases run in tests/test_channel_kit_*.py, one group of channels each (xdist's workers share
    them): every channel of the registry has its drivers and is in exactly one group, and each group module
    runs the kit."""
    from messaging_llm_bot.conversation.routes import channel_names

    groups: dict[str, tuple[str, ...]] = {}
    for path in sorted(Path(__file__).parent.glob("test_channel_kit_*.py")):
        module = importlib.import_module(f"tests.{path.stem}")
        kits = [v for k, v in vars(module).items() if k.startswith("Test") and issubclass(v, ChannelKit)]
        assert len(kits) == 1, path.name
        groups[path.name] = kits[0].channels
    every = [channel for channels in groups.values() for channel in channels]
    registry = set(channel_names())
    missing = sorted(registry - set(CHANNELS))
    assert not missing, f"no kit drivers for {missing}: tests/kit_<name>.py registers them (docs/channels.md, step 9)"
    missing = sorted(registry - set(every))
    assert not missing, f"the kit runs in no module for {missing}: tests/test_channel_kit_<name>.py (step 9)"
    twice = sorted({channel for channel in every if every.count(channel) > 1})
    assert not twice, f"the kit runs twice for {twice}: {groups}"
    assert sorted(every) == sorted(CHANNELS) == sorted(registry), groups  # and no channel the registry lacks
    assert all(groups.values()), groups
