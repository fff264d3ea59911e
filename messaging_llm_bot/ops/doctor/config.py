"""The doctor's config check: the tree loads and validates; a settings file holding a secret is private."""

from __future__ import annotations

from assistant_framework.config import ConfigError, load_config_detailed, redact
from assistant_framework.hints import CLI
from messaging_llm_bot.ops.channels.doctor import FAIL, OK, WARN, Check, Context


def check_config(ctx: Context) -> list[Check]:
    from assistant_framework.collectors.check import plugin_schema_errors

    try:
        loaded = load_config_detailed(ctx.config_path)
        errors = plugin_schema_errors(loaded)
    except ConfigError as exc:
        errors = str(exc).splitlines()
        loaded = None
    if errors:
        return [
            Check(
                "config",
                FAIL,
                "; ".join(errors[:5]),
                f"fix the file and key named, then `{CLI} config validate --config {ctx.config_path}`",
            )
        ]
    assert loaded is not None  # no errors: the config loaded
    ctx.config = loaded.data
    local = ctx.config_path / "local"
    where = f" (with your settings in {local})" if local.is_dir() else ""
    checks = [Check("config", OK, f"{ctx.config_path} is valid{where}")]
    # A settings file that holds a non-empty secret (redacting changes it) and others may read.
    exposed = [
        f
        for f, raw in loaded.raw.items()
        if f.is_relative_to(local) and f.stat().st_mode & 0o077 and redact(raw) != raw
    ]
    if exposed:
        names = " ".join(str(f) for f in exposed)
        checks.append(
            Check("settings files", WARN, f"{names}: holds a secret and others may read it", f"chmod 600 {names}")
        )
    return checks
