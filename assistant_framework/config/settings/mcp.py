"""The ``mcp`` section: the MCP servers whose tools are offered as skills (docs/mcp.md)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from assistant_framework.config.env import url_without_secrets, value_secrets
from assistant_framework.config.settings.fields import (
    flag,
    frozen,
    keyed,
    mapping_of,
    maybe,
    named,
    number,
    reads,
    strings,
    text,
    whole,
)
from assistant_framework.config.settings.policy import CAPABILITIES
from assistant_framework.config.settings.readers import HTTP_URL, pattern
from assistant_framework.json_types import JsonSchema

#: What an outside tool may do unless the owner says otherwise: ``ask`` under the shipped policy.
DEFAULT_CAPABILITIES = ("network",)
#: A list of capabilities (``["network", "send"]``): at least one, each once.
CAPABILITY_LIST: JsonSchema = {"items": {"enum": list(CAPABILITIES)}, "minItems": 1, "uniqueItems": True}
#: A server's name starts its tools' skill names: letters, digits and _ only.
SERVER_NAME = pattern("^[A-Za-z][A-Za-z0-9_]{0,23}$", "1–24 of A-Z a-z 0-9 _, a letter first")


@dataclass(frozen=True)
class ServerSettings:
    """One entry of ``mcp.servers``: a command the assistant starts (stdio) or a URL (streamable HTTP)."""

    #: The entry's name in ``mcp.servers``; it starts its tools' skill names.
    name: str = field(default="", metadata=named())
    command: str = field(default="", metadata=reads(text, min_length=1))
    args: tuple[str, ...] = field(default=(), metadata=reads(strings))
    env: Mapping[str, str] = field(default_factory=frozen, repr=False, metadata=reads(mapping_of(text)))
    #: Empty: the bot's working directory.
    cwd: str = field(default="", metadata=reads(text, min_length=1))
    url: str = field(default="", metadata=reads(text, pattern=HTTP_URL))
    headers: Mapping[str, str] = field(default_factory=frozen, repr=False, metadata=reads(mapping_of(text)))
    enabled: bool = field(default=True, metadata=reads(flag))
    #: The tools offered to the model (the server's names or the skill names); None: every tool it lists.
    tools: tuple[str, ...] | None = field(
        default=None, metadata=reads(maybe(strings), null=True, each={"minLength": 1}, schema={"uniqueItems": True})
    )
    capabilities: tuple[str, ...] = field(default=DEFAULT_CAPABILITIES, metadata=reads(strings, schema=CAPABILITY_LIST))
    tool_capabilities: Mapping[str, tuple[str, ...]] = field(
        default_factory=frozen, metadata=reads(mapping_of(strings), each=CAPABILITY_LIST)
    )
    #: Results are the owner's own content, not outside content.
    trusted: bool = field(default=False, metadata=reads(flag))
    #: None: the section's ``timeout_seconds``.
    timeout_seconds: float | None = field(default=None, metadata=reads(maybe(number), null=True, above=0, maximum=600))
    #: The description a tool shows the model is cut to this many characters (0: the name only).
    description_chars: int = field(default=200, metadata=reads(whole, minimum=0, maximum=2000))

    @property
    def transport(self) -> str:
        """``stdio`` or ``http``."""
        return "http" if self.url else "stdio"

    @property
    def where(self) -> str:
        """The server as the owner configured it, for messages: no header values, no environment, and a URL's
        password and secret query values (``?api_key=``) as ``***``."""
        if self.url:
            return url_without_secrets(self.url)
        return " ".join([self.command, *self.args])[:200]

    @property
    def secrets(self) -> tuple[str, ...]:
        """What must never be shown of this server, longest first: its URL's secrets, its secret header
        and environment values (by key name or by look, as ``config show`` hides them)."""
        found = set(value_secrets(self.url, "url"))
        for values in (self.headers, self.env):
            for key, value in values.items():
                found.update(value_secrets(value, key))
        for arg in self.args:
            found.update(value_secrets(arg))
        return tuple(sorted(found, key=len, reverse=True))

    @property
    def timeout(self) -> float:
        """Seconds for a call or a start (``McpSettings.active`` fills in the section's)."""
        return float(self.timeout_seconds if self.timeout_seconds is not None else McpSettings.timeout_seconds)

    def capabilities_of(self, tool: str) -> tuple[str, ...]:
        """The capabilities of one of the server's tools: its own entry, else the server's."""
        return tuple(self.tool_capabilities.get(tool) or self.capabilities)


@dataclass(frozen=True)
class McpSettings:
    """The ``mcp`` section."""

    enabled: bool = field(default=True, metadata=reads(flag))
    #: A call, and a server's start (connect and list its tools); each server may set its own.
    timeout_seconds: float = field(default=30.0, metadata=reads(number, above=0, maximum=600))
    servers: Mapping[str, ServerSettings] = field(
        default_factory=frozen, metadata=keyed(ServerSettings, names=SERVER_NAME)
    )

    def active(self) -> tuple[ServerSettings, ...]:
        """The servers to connect to (the section and the server enabled), each with its timeout filled in."""
        if not self.enabled:
            return ()
        return tuple(
            server if server.timeout_seconds is not None else replace(server, timeout_seconds=self.timeout_seconds)
            for server in self.servers.values()
            if server.enabled
        )
