"""One run of ``assistant setup``: the config checked, the steps in order, then the settings written."""

from __future__ import annotations

from assistant_framework.config import ConfigError, load_config_detailed
from assistant_framework.config.checks import unknown_zone
from assistant_framework.hints import CLI
from assistant_framework.workspace import created_workspace, is_workspace
from messaging_llm_bot.llm.probe import LOCAL_SERVERS
from messaging_llm_bot.ops.channels.setup import ChannelSetup, channel_setups, default_flags
from messaging_llm_bot.ops.setup.answers import Answers, Current, make_paths, system_timezone, valid_zone
from messaging_llm_bot.ops.setup.dialog import Dialog, SetupError, Step
from messaging_llm_bot.ops.setup.model import ModelSteps

MODEL, ZONE, CHANNELS = "model", "time zone", "channels"
#: What a re-run at a terminal asks about (``Wizard.what_to_change``); None: every step, as at the first run.
CHOICES: tuple[tuple[str | None, str], ...] = (
    (MODEL, "the model (the server and its model, then a test turn)"),
    (ZONE, "the time zone"),
    (CHANNELS, "the chat channels (a bot token, your user id)"),
    (None, "everything, each answer offered as it is now"),
)


class Wizard(Step):
    """One run of the setup; each step returns what it decided and says what it did."""

    def __init__(self, answers: Answers, dialog: Dialog | None = None) -> None:
        # What the config already holds is read in ``run``, once the config is known to load.
        super().__init__(answers, dialog or Dialog(), Current(), [])
        self.io.interactive = answers.interactive
        #: Where to look for a local model server (tests point this at their fake).
        self.candidates = LOCAL_SERVERS

    def check_config(self) -> None:
        """The config must load as it is: every answer is written into it, and a broken file
        would refuse the writes only at the end (after the owner's message was read and used up)."""
        from assistant_framework.collectors.check import plugin_schema_errors

        try:
            errors = plugin_schema_errors(load_config_detailed(self.a.config, env=False))
        except ConfigError as exc:
            errors = str(exc).splitlines()
        if errors:
            raise SetupError(
                f"the config has errors; fix it first (`{CLI} config validate` checks it):\n  " + "\n  ".join(errors)
            )

    def timezone(self) -> str:
        """The IANA zone: ``--timezone``, else the configured one (offered at a terminal), else the system's."""
        default = self.current.timezone or system_timezone()
        if self.a.timezone is not None:
            zone = self.a.timezone
            if not valid_zone(zone):
                raise SetupError(unknown_zone(zone))
        else:
            zone = self._ask_until(
                "Your time zone (IANA name)",
                default,
                lambda z: None if valid_zone(z) else unknown_zone(z),
            )
        self.io.say(f"Time zone: {zone}.")
        self.settings.append(("runtime.timezone", zone))
        return zone

    def channels(self) -> ChannelSetup:
        """Each channel's steps (ops/channels/<name>/setup.py), in the registry's order; their settings join the
        run's list."""
        try:
            configured = load_config_detailed(self.a.config, validate=False, env=False).data
        except ConfigError:
            configured = {}
        flags = self.a.flags if self.a.flags is not None else default_flags()
        setup = ChannelSetup(self.a.config, flags, self.io, configured, settings=self.settings)
        for hooks in channel_setups():
            hooks.steps(setup)
        return setup

    def what_to_change(self) -> str | None:
        """On a configured setup at a terminal, with no answer given as a flag: which one step to run (the rest is
        kept unasked: a new time zone no longer walks through the bot token). None: every step."""
        runner = self.current.runner
        if runner is None or not self.a.interactive or self._answers_given():
            return None
        zone = self.current.timezone or "not set"
        self.io.say(
            f"Set up already ({self.a.config}/local/): the model {runner.get('model')} at {runner.get('base_url')}, "
            f"the time zone {zone}."
        )
        return CHOICES[self.io.choose("Change which (the rest stays as it is)", [label for _, label in CHOICES])][0]

    def _answers_given(self) -> bool:
        """Whether a flag gives an answer (the model's, the zone's, a channel's): then every step runs, as before."""
        if any(value is not None for value in (self.a.base_url, self.a.model, self.a.api_key, self.a.timezone)):
            return True
        if self.a.flags is None:
            return False
        return any(getattr(self.a.flags, key, value) != value for key, value in vars(default_flags()).items())

    def run(self) -> int:
        """All steps (or the one a re-run chose), then (when the test turn passed) the settings written to the
        local layer."""
        from assistant_framework.settings import write_setting

        self.check_config()
        self.current = Current.read(self.a.config)
        only = self.what_to_change()
        channels = self.channels() if only in (None, CHANNELS) else None
        model_steps = ModelSteps(self.a, self.io, self.current, self.settings, self.candidates)
        runner = model_steps.server() if only in (None, MODEL) else None
        if only in (None, ZONE):
            self.timezone()
        if runner is not None and self.a.test_turn and not model_steps.test_turn(runner):
            again = "".join(f" {flag}" for flag in channels.again) if channels else ""
            self.io.say(
                "Nothing was written: the config is as it was. Check the model server and run setup again "
                f"(`make setup`), or save these answers without the test turn: "
                f"`{CLI} setup --no-test{again}`."
            )
            return 1
        for key, value in self.settings:
            try:
                file = write_setting(self.a.config, key, value)
            except ConfigError as exc:
                raise SetupError(f"cannot write {key}: {exc}") from None
            self.a.written.append(str(file))
        new = not is_workspace(self.a.workspace)
        created_workspace(self.a.workspace)  # setup is one of the commands that creates a workspace
        self._say_next(channels.reached if channels else [], new)
        return 0

    def _say_next(self, reached: list[str], new_workspace: bool) -> None:
        files = sorted(set(self.a.written))
        self.io.say("Written (git-ignored, private): " + (", ".join(files) or "nothing (nothing changed)"))
        # A new one is said to be new, as the bot says it: a --workspace typo is seen at once.
        self.io.say(f"Workspace: {self.a.workspace}" + (" (created now, empty)" if new_workspace else ""))
        paths = make_paths(self.a.config, self.a.workspace)
        self.io.say(
            f"Next: `make run{paths}` starts the bot"
            + (f" in {' and '.join(reached)}" if reached else "")
            + f"; `make chat{paths}` talks to it in this terminal; `make doctor{paths}` checks everything."
        )
