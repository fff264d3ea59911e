"""Mutations of config, secrets and redaction."""

from __future__ import annotations

from mutation_list.common import (
    AF,
    AGENT_SKILLS,
    DECLARED_SECTIONS,
    DISCORD_BOT,
    MCP_CLI,
    MCP_SECRETS,
    REDACTION,
    Mutation,
)

MUTATIONS: tuple[Mutation, ...] = (
    # -- who a chat channel answers: the Matrix, WhatsApp, Slack and Discord records (settings/allowlist.py) --
    Mutation(
        "discord-allowlist-open",
        f"{AF}/config/settings/allowlist.py",
        "        return sender in self.allowed_ids",
        "        return True",
        "any Discord user who writes to the bot is answered, with no pairing code",
        DISCORD_BOT,
    ),
    # -- config set: one writer at a time per config (settings.py) -------------------------------------------
    Mutation(
        "config-set-unlocked",
        f"{AF}/settings.py",
        "        if not flock_until(fd, time.monotonic() + timeout, 0.05):",
        "        if False:",
        "two config sets at once each write back the file as they read it: one value is lost",
        ("test_config_local.py",),
    ),
    # -- config show and the secret-key pattern (config/env.py) ----------------------------------------
    Mutation(
        "env-secret-case",
        f"{AF}/config/env.py",
        "    re.IGNORECASE,",
        "    0,",
        "API_KEY or Token keys are shown in clear",
        REDACTION,
    ),
    Mutation(
        "env-redact-list-under-secret",
        f"{AF}/config/env.py",
        "return [redact(v, key) for v in value]",
        "return [redact(v) for v in value]",
        "a list of secrets (passwords: [...]) is shown by config show",
        REDACTION + ("test_config_local.py",),
    ),
    Mutation(
        "env-no-credential",
        f"{AF}/config/env.py",
        "|secret|credential|private[_-]?key|",
        "|secret|private[_-]?key|",
        "a credentials field is shown and logged in clear",
        REDACTION,
    ),
    # -- secrets by what they look like: URLs and token-like values (config/env.py, MCP servers) ---------
    Mutation(
        "env-url-secrets-shown",
        f"{AF}/config/env.py",
        "            return url_without_secrets(value)",
        "            return value",
        "config show prints an MCP server URL's password and ?api_key=",
        MCP_SECRETS,
    ),
    Mutation(
        "env-key-word-token-shown",
        f"{AF}/config/env.py",
        "    if key and _KEY_WORD.search(key) and _TOKEN_LIKE.match(value):",
        "    if False:",
        "config show prints a token under OPENAI_KEY (a key named by look, not by SECRET_KEY)",
        MCP_SECRETS,
    ),
    Mutation(
        "mcp-where-shows-the-url",
        f"{AF}/config/settings/mcp.py",
        "            return url_without_secrets(self.url)",
        "            return self.url",
        "skills list, doctor and the bot log show an MCP server URL's password and token",
        MCP_SECRETS,
    ),
    # -- redaction of echoed secrets (redaction.py) ----------------------------------------------------
    Mutation(
        "redaction-whole-secrets-only",
        f"{AF}/redaction.py",
        "width = len(secret) if len(secret) < min_run else min_run",
        "width = len(secret)",
        "a key echoed cut short or in pieces is shown",
        REDACTION,
    ),
    Mutation(
        "redaction-first-occurrence-only",
        f"{AF}/redaction.py",
        "start = text.find(gram, start + 1)",
        "start = -1",
        "a secret echoed twice is redacted once",
        REDACTION,
    ),
    Mutation(
        "config-trusted-proxies-unchecked",
        f"{AF}/config/checks.py",
        "errors += trusted_proxy_errors(data)",
        "errors += []",
        "a web.trusted_proxies entry that is no address is an error without its file",
        ("test_web_signin.py",),
    ),
    Mutation(
        "remove-setting-from-a-tracked-file",
        f"{AF}/settings.py",
        "        if tracked:\n",
        "        if False:\n",
        "mcp remove edits a tracked config file (or reports success while the tracked value stays in force)",
        MCP_CLI,
    ),
    Mutation(
        "agent-skill-exec-allowed-by-default",
        f"{AF}/config/settings/policy.py",
        '"send": "ask", "exec": "ask"}',
        '"send": "ask", "exec": "allow"}',
        "a SKILL.md skill's script runs without the owner's confirmation",
        AGENT_SKILLS,
    ),
    # -- the config's JSON Schema, derived from the settings records (config/settings/fields.py) -----------
    Mutation(
        "config-bounds-not-derived",
        f"{AF}/config/settings/fields.py",
        "    return {**schema, **bounds}",
        "    return schema",
        "a key's bounds written in its record's field (port at most 65535, max_skill_rounds 1-50) are not checked",
        ("test_config_schema.py", "test_config.py"),
    ),
    Mutation(
        "config-rules-not-derived",
        f"{AF}/config/settings/fields.py",
        "    return {**schema, **copy.deepcopy(rules)}",
        "    return schema",
        "an enabled Signal, Matrix or email channel without its account or servers passes validation",
        ("test_config_schema.py",),
    ),
    Mutation(
        "config-required-not-derived",
        f"{AF}/config/settings/fields.py",
        '        schema["required"] = required',
        "        pass",
        "a runner without a model, a serve client without token_env passes validation (fails at start instead)",
        ("test_config_schema.py", "test_config.py"),
    ),
    # -- a channel's own section, declared in its folder (config/sections.py; channels/sections.py: conversation.py) --
    Mutation(
        "declared-section-not-in-schema",
        f"{AF}/config/schema.py",
        "**{name: schema_of(record) for name, record in sections}",
        "**{}",
        "a channel's own section is an unknown section: the bot with it configured does not start",
        DECLARED_SECTIONS,
    ),
    Mutation(
        "declared-section-not-read",
        f"{AF}/config/settings/__init__.py",
        "for name, record in declared().items() if name in data",
        "for name, record in declared().items() if False",
        "a channel reads its record's defaults whatever the config says: an enabled channel never starts",
        DECLARED_SECTIONS,
    ),
    Mutation(
        "declared-section-reloads-nothing",
        f"{AF}/config/reloadable.py",
        '    return RELOAD if any(".".join(names[1:end]) in reloaded for end in range(2, len(names) + 1)) else RESTART',
        "    return RESTART",
        "a channel's allowlist changed in its own section waits for a restart after /reload",
        DECLARED_SECTIONS,
    ),
    Mutation(
        "config-yaml-flow-unbounded",
        f"{AF}/config/limits.py",
        "        if self.flow_level >= MAX_FLOW_DEPTH:",
        "        if False:",
        "a YAML line of open brackets is scanned to its end (quadratic: seconds of CPU) before the depth is refused",
        ("test_config.py",),
    ),
)
