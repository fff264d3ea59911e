"""Mutations of the CLI, doctor and setup, the Makefile and the test suite's own guards."""

from __future__ import annotations

from mutation_list.common import AGENT_SKILLS_INSTALL, BOT, DOCTOR_SERVICES, MCP_CLI, MEMORY_JOURNAL, Mutation

MUTATIONS: tuple[Mutation, ...] = (
    Mutation(
        "mcp-list-url-with-its-secret",
        f"{BOT}/cli/mcp.py",
        '"url": url_without_secrets(server.url) if server.url else None,',
        '"url": server.url or None,',
        "mcp list --json prints a token in an MCP server's URL",
        MCP_CLI,
    ),
    Mutation(
        "mcp-list-header-values",
        f"{BOT}/cli/mcp.py",
        '"headers": redact({"headers": dict(server.headers)})["headers"],',
        '"headers": dict(server.headers),',
        "mcp list --json prints an MCP server's Authorization header",
        MCP_CLI,
    ),
    Mutation(
        "mcp-test-error-with-url-secret",
        f"{BOT}/cli/mcp.py",
        "error = redact_text(status.error, secrets)",
        "error = status.error",
        "mcp test prints the token of an unreachable server's URL, quoted in the connection error",
        MCP_CLI,
        equivalent="the mcp package masks its own errors (connection.py, source.py: the server's secrets); the "
        "CLI's masking is the second line for a message that names them another way",
    ),
    Mutation(
        "mcp-test-load-errors-with-url-secret",
        f"{BOT}/cli/mcp.py",
        "problems = [redact_text(error.error, secrets) for error in loaded.errors]",
        "problems = [error.error for error in loaded.errors]",
        "mcp test --json prints the token of an unreachable server's URL in its errors",
        MCP_CLI,
        equivalent="the mcp package masks its load errors (source.py, ServerSettings.where); the CLI's masking is "
        "the second line",
    ),
    Mutation(
        "mcp-add-over-a-configured-server",
        f"{BOT}/cli/mcp.py",
        "if args.name in existing:",
        "if False:",
        "mcp add merges a new server into a configured one (a disabled tracked server stays disabled, half-changed)",
        MCP_CLI,
    ),
    Mutation(
        "doctor-offline-search-fails",
        f"{BOT}/ops/doctor/services.py",
        '    if section.backend == "duckduckgo":',
        "    if False:",
        "on a machine without internet the shipped config's DuckDuckGo fails the doctor (exit 1)",
        DOCTOR_SERVICES,
    ),
    Mutation(
        "doctor-search-not-checked",
        f"{BOT}/ops/doctor/services.py",
        'if "search" in ctx.config:',
        "if False:",
        "doctor says nothing of a search backend that cannot be reached",
        DOCTOR_SERVICES,
    ),
    Mutation(
        "doctor-services-on-quick",
        f"{BOT}/ops/doctor/services.py",
        "if ctx.quick or ctx.config is None:",
        "if ctx.config is None:",
        "doctor --quick (the container's health check) sends a search to a backend that may count it",
        DOCTOR_SERVICES,
    ),
    # -- the suite's tiers and per-test bound (tests/tiers.py, issue 41) -------------------------------------
    Mutation(
        "tiers-bound-unchecked",
        "tests/tiers.py",
        'if report.duration > _bound[0] and item.get_closest_marker("slow") is None:',
        'if report.duration > _bound[0] and item.get_closest_marker("slow") is not None:',
        "a test over the per-test bound passes unless marked slow (the bound keeps nothing)",
        ("test_tiers.py",),
    ),
    Mutation(
        "tiers-unseen-process-passes",
        "tests/tiers.py",
        'if spawned and item.get_closest_marker("subprocess") is None:',
        "if False:",
        "a test that starts a process the markers missed stays in make check's tier",
        ("test_tiers.py",),
    ),
    Mutation(
        "tiers-helpers-not-followed",
        "tests/tiers.py",
        "                    found |= causes_of(value, seen)",
        "                    pass",
        "a process started through a helper of tests/ leaves the test in the fast tier",
        ("test_tiers.py",),
    ),
    Mutation(
        "make-install-banner",
        "Makefile",
        "$(STAMP) $(DEV_STAMP): export PYTHONWARNINGS := ignore",
        "$(STAMP) $(DEV_STAMP): export UNUSED_BY_ANYONE := ignore",
        "make run prints setuptools' editable-install banner between the command and the bot's first line",
        ("test_make_install_quiet.py",),
    ),
    Mutation(
        "console-exit-waits-for-memory",
        f"{BOT}/cli/run.py",
        "if not runtime.shutdown(timeout=min(configured.shutdown_timeout_seconds, CONSOLE_EXIT_SECONDS)):",
        "if not runtime.shutdown(timeout=configured.shutdown_timeout_seconds):",
        "/quit in the terminal chat waits up to 20 s for a background model call",
        MEMORY_JOURNAL,
    ),
    Mutation(
        "console-exit-says-the-wrong-thing",
        f"{BOT}/cli/run.py",
        "if not runtime.shutdown(timeout=min(configured.shutdown_timeout_seconds, CONSOLE_EXIT_SECONDS)):",
        "if runtime.shutdown(timeout=min(configured.shutdown_timeout_seconds, CONSOLE_EXIT_SECONDS)):",
        "leaving the terminal chat says work continues when none was left, and nothing when some was",
        MEMORY_JOURNAL,
    ),
    Mutation(
        "agent-skill-install-without-yes",
        f"{BOT}/cli/skills.py",
        '        if not yes and not _confirmed("Install it? [y/N] "):',
        "        if not yes and False:",
        "skills install installs without the owner's yes",
        AGENT_SKILLS_INSTALL,
    ),
)
