"""What every area file of the mutation list shares: the ``Mutation`` record, the paths' prefixes and the test
files by the guard they cover (the mutation loop runs only these, to keep the machine usable)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Mutation:
    """One one-line change to one guard, and the test files that should notice it."""

    id: str
    path: str
    old: str  # must occur exactly once in the file
    new: str
    breaks: str  # what the change would let through
    tests: tuple[str, ...]
    equivalent: str = ""  # why no test can notice it (then it is expected to survive)


# Test files by the guard they cover (the mutation loop runs only these, to keep the machine usable).
MCP_CLI = ("test_mcp_cli.py",)
PAIRING = ("test_pairing.py",)
BUSY = ("test_busy_modes.py",)
#: The channel contract kit (tests/channel_kit.py, every channel in-process), by the module that runs it on a
#: channel's group, and all of them.
KIT_MATRIX = ("test_channel_kit_matrix.py",)
KIT_EMAIL = ("test_channel_kit_email.py",)
KIT_CONSOLE_WEBCHAT = ("test_channel_kit_console_webchat.py",)
KIT_TELEGRAM_SIGNAL_WHATSAPP = ("test_channel_kit_telegram_signal_whatsapp.py",)
KIT_SLACK_DISCORD = ("test_channel_kit_slack_discord.py",)
CHANNEL_KIT = (*KIT_MATRIX, *KIT_EMAIL, *KIT_CONSOLE_WEBCHAT, *KIT_TELEGRAM_SIGNAL_WHATSAPP, *KIT_SLACK_DISCORD)
MEMORY_JOURNAL = ("test_memory_journal.py", "test_console_quit.py")
SERVE = ("test_serve_clients.py",)
EMAIL = (
    "test_email_units.py",
    "test_email_channel.py",
    "test_email_process.py",
    "test_email_doctor.py",
    *KIT_EMAIL,
)
#: The email channel over TLS against real servers, and the mail clients' TLS context (assistant_framework/tls.py).
EMAIL_TLS = ("test_email_tls.py",)
SERVE_MCP = ("test_serve_mcp.py",)
OWNER_CHATS = ("test_owner_chats.py",)
SERVE_CHAT = ("test_serve_openai.py",)
WEBCHAT = ("test_web_chat_browser.py",)
WEBCHAT_JOBS = ("test_webchat_jobs.py",)
HOOKS = ("test_hooks.py",)
MATRIX = ("test_matrix.py",)
MATRIX_BOT = ("test_matrix_bot.py", "test_matrix.py")
WHATSAPP_BOT = ("test_whatsapp_bot.py",)
WHATSAPP = ("test_whatsapp_channel.py",)
SLACK_BOT = ("test_slack_bot.py",)
SLACK = ("test_slack_channel.py",)
SLACK_SOCKET = ("test_slack_socket.py",)
DISCORD_BOT = ("test_discord_bot.py",)
DISCORD = ("test_discord_channel.py",)
DOCTOR_SERVICES = ("test_doctor_services.py", "test_web_search.py")
#: A channel's own config section, declared in its folder (config/sections.py, channels/sections.py).
DECLARED_SECTIONS = ("test_channel_walk.py", "test_config_sections.py")
AGENT_SKILLS = ("test_agent_skills.py", "test_agent_skills_bot.py", "test_agent_skills_install.py")
AGENT_SKILLS_INSTALL = ("test_agent_skills_install.py",)
WEB_SKILLS_INSTALL = ("test_web_skills_install.py",)
WEB_CONTROL = ("test_web_control.py",)
CAPS = ("test_spending_caps.py", "test_spending_cli.py", "test_spending_cut_calls.py")
ACCESS = (
    "test_security_guests.py",
    "test_security_owner_commands.py",
    "test_guest_skills.py",
    "test_call_path.py",
    "test_security_injection.py",
    "test_untrusted_overwrites.py",
    "test_policy.py",
)
POLICY = (
    "test_policy.py",
    "test_agent_policy.py",
    "test_untrusted_overwrites.py",
    "test_security_injection.py",
    "test_call_path.py",
    "test_security.py",
)
REDACTION = (
    "test_redaction.py",
    "test_secret_keys.py",
    "test_policy.py",
    "test_agent_policy.py",
    "test_security.py",
    "test_config.py",
)
PATHS = (
    "test_workspace.py",
    "test_paths_sibling_folder.py",
    "test_security.py",
    "test_security_guests.py",
    "test_memory_damage.py",
    "test_web_http.py",
)
INBOX = (
    "test_inbox.py",
    "test_inbox_compaction.py",
    "test_telegram_lifecycle.py",
    "test_reliability_state.py",
    "test_signal_reliability.py",
    "test_signal.py",
)
BACKUP = ("test_backup.py", "test_restore_paths.py", "test_private_files.py", "test_workspace_tightening.py")
NET = (
    "test_web_skill.py",
    "test_netguard_bypasses.py",
    "test_netguard_https.py",
    "test_netguard_through_the_bot.py",
    "test_policy.py",
)
HTTP_DEADLINE = ("test_http_deadline.py",)
WEB = ("test_web_signin.py", "test_web_http.py", "test_web_limits.py", "test_web_bot.py")
GUARD = (
    "test_policy.py",
    "test_agent_policy.py",
    "test_untrusted_overwrites.py",
    "test_security_injection.py",
    "test_call_path.py",
    "test_memory_skills_untrusted.py",
    "test_untrusted_writes.py",
    "test_forwarded_media.py",
    "test_outside_content_neighbours.py",
)
FRAMING = ("test_protocol.py", "test_quoted_calls.py")
OUTSIDE_ERRORS = ("test_outside_errors.py", "test_mcp_bot.py")
ALLOWANCE = ("test_outside_allowance.py", "test_agent_policy.py")
TELEGRAM = (
    "test_security.py",
    "test_security_guests.py",
    "test_security_owner_commands.py",
    "test_telegram_basic.py",
    "test_telegram_group_allowlist.py",
    "test_telegram_lifecycle.py",
)
SIGNAL = (
    "test_signal_identity.py",
    "test_signal_allowlist.py",
    "test_security_owner_commands.py",
    "test_signal.py",
    "test_guest_skills.py",
)
JOBS = ("test_jobs_guard.py", "test_jobs_bot.py", "test_jobs_skill.py", "test_jobs_schedule.py")
JOB_ROUTING = ("test_jobs_one_scheduler.py", "test_jobs_signal.py", "test_console_jobs.py")
IMAGES = ("test_photos_bounds.py", "test_photos.py")
MCP_SECRETS = ("test_mcp_shapes.py", "test_mcp_secrets.py")
MCP_TOOLS = ("test_mcp_shapes.py", "test_mcp_servers.py")
PREPARE = ("test_call_path.py", "test_skills_manager.py", "test_skills_small_model_args.py", "test_agent_policy.py")

AF = "assistant_framework"
BOT = "messaging_llm_bot"
