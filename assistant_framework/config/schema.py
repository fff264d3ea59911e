"""JSON Schemas of the known config sections; config/README.md documents every key.

Sections the project owns reject unknown keys, so a typo is reported instead
of silently ignored. Plugins (collectors) validate their own sections.
"""

from __future__ import annotations

_STR_LIST = {"type": "array", "items": {"type": "string"}}
_DECISION = {"enum": ["allow", "ask", "deny"]}
_HTTP_URL = {"type": "string", "pattern": "^https?://"}
# A phone number in E.164 form or a Signal ACI UUID.
_SIGNAL_ID = "^(\\+[1-9][0-9]{6,14}|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})$"

_ENDPOINT_KEYS = {
    "enabled": {"type": "boolean"},
    "base_url": _HTTP_URL,
    "model": {"type": "string"},
    "api_key": {"type": "string"},
    "timeout_seconds": {"type": "number", "exclusiveMinimum": 0},
}
_EMBEDDINGS = {
    "type": "object",
    "properties": {**_ENDPOINT_KEYS, "batch": {"type": "integer", "minimum": 1}},
    "additionalProperties": False,
}
_TRANSCRIPTION = {
    "type": "object",
    "properties": {**_ENDPOINT_KEYS, "language": {"type": ["string", "null"]}},
    "additionalProperties": False,
}

_CAP = {"type": ["number", "null"], "minimum": 0}
_WHOLE_CAP = {"type": ["integer", "null"], "minimum": 0}
_LIMITS = {
    "type": "object",
    "properties": {
        "daily_tokens": _WHOLE_CAP,
        "monthly_tokens": _WHOLE_CAP,
        "daily_cost": _CAP,
        "monthly_cost": _CAP,
    },
    "additionalProperties": False,
}
_PRICE = {
    "type": "object",
    "properties": {
        "input_per_mtok": {"type": "number", "minimum": 0},
        "output_per_mtok": {"type": "number", "minimum": 0},
        "cached_input_per_mtok": _CAP,
    },
    "additionalProperties": False,
}

RUNNER_SCHEMA = {
    "type": "object",
    "required": ["name", "base_url", "model"],
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "base_url": _HTTP_URL,
        "model": {"type": "string", "minLength": 1},
        "api_key": {"type": "string"},
        "extra_body": {"type": "object"},
        "api_key_env": {"type": "string"},
        "timeout_seconds": {"type": "number", "exclusiveMinimum": 0},
        "structured_output": {"enum": ["auto", "json_schema", "json_object", "off"]},
        "tool_transport": {"enum": ["json", "native", "auto"]},
        "skill_choice": {"enum": ["auto", "direct", "two_step"]},
        "vision": {"type": "boolean"},
        "limits": _LIMITS,
        "price": _PRICE,
    },
    "additionalProperties": False,
}

LLM_SCHEMA = {
    "type": "object",
    "properties": {
        "runners": {"type": "array", "items": RUNNER_SCHEMA, "minItems": 1},
        "temperature": {"type": ["number", "null"], "minimum": 0},
        "max_tokens": {"type": ["integer", "null"], "minimum": 1},
        "max_skill_rounds": {"type": "integer", "minimum": 1, "maximum": 50},
        "max_concurrency": {"type": "integer", "minimum": 1, "maximum": 256},
        "stream": {"type": "boolean"},
        "retries_per_runner": {"type": "integer", "minimum": 0, "maximum": 10},
        "retry_max_wait_seconds": {"type": "number", "minimum": 0},
        "retry_backoff_seconds": {"type": "number", "minimum": 0},
        "background_extra_body": {"type": "object"},
        "embeddings": _EMBEDDINGS,
        "transcription": _TRANSCRIPTION,
        "vision_runner": {"type": "string"},
        "image_max_side": {"type": "integer", "minimum": 64, "maximum": 8192},
    },
    "additionalProperties": False,
}

TELEGRAM_SCHEMA = {
    "type": "object",
    "properties": {
        "token": {"type": "string"},
        "allowed_user_ids": {"type": "array", "items": {"type": "integer"}},
        "owner_id": {"type": ["integer", "null"]},
        # An address as users write it (http://host:8081, with or without /bot), or empty: Telegram's own.
        "base_url": {"type": ["string", "null"], "pattern": "^(https?://[^/\\s?#]+.*)?$"},
        "base_file_url": {"type": ["string", "null"], "pattern": "^(https?://[^/\\s?#]+.*)?$"},
        "mode": {"enum": ["polling", "webhook"]},
        "group_mode": {"enum": ["mention", "all"]},
        "stream": {"type": "boolean"},
        "progress": {"type": "boolean"},
        "morning_digest": {"type": ["string", "null"], "pattern": "^([01][0-9]|2[0-3]):[0-5][0-9]$"},
        "webhook": {
            "type": "object",
            "properties": {
                "listen": {"type": "string"},
                "port": {"type": "integer", "minimum": 1, "maximum": 65535},
                "url": {"type": "string"},
                # Empty or absent: one is generated into state/webhook_secret. Set: Telegram's alphabet,
                # long enough not to be guessed.
                "secret_token": {"type": "string", "pattern": "^([A-Za-z0-9_-]{16,256})?$"},
            },
            "additionalProperties": False,
        },
    },
    "additionalProperties": False,
}

SIGNAL_SCHEMA = {
    "type": "object",
    "properties": {
        "enabled": {"type": "boolean"},
        "base_url": _HTTP_URL,
        "account": {"type": "string", "pattern": "^(|\\+[1-9][0-9]{6,14})$"},
        "allowed": {"type": "array", "items": {"type": "string", "pattern": _SIGNAL_ID}},
        "owner": {"type": ["string", "null"], "pattern": _SIGNAL_ID},
        "group_mode": {"enum": ["mention", "all"]},
        "typing": {"type": "boolean"},
        "morning_digest": {"type": ["string", "null"], "pattern": "^([01][0-9]|2[0-3]):[0-5][0-9]$"},
    },
    # The bot needs its own number to talk to the daemon and to notice mentions of itself.
    "if": {"properties": {"enabled": {"const": True}}, "required": ["enabled"]},
    "then": {"required": ["account"], "properties": {"account": {"minLength": 2}}},
    "additionalProperties": False,
}

# A Matrix user id: @localpart:server.
_MATRIX_USER = "^@[^:\\s]+:[^\\s]+$"
_ENV_NAME = {"type": "string", "pattern": "^([A-Za-z_][A-Za-z0-9_]{0,127})?$"}

MATRIX_SCHEMA = {
    "type": "object",
    "properties": {
        "enabled": {"type": "boolean"},
        "homeserver": {"type": "string", "pattern": "^(https?://[^/\\s?#]+.*)?$"},
        "user_id": {"type": "string", "pattern": "^(|@[^:\\s]+:[^\\s]+)$"},
        "password": {"type": "string"},
        "password_env": _ENV_NAME,
        "access_token": {"type": "string"},
        "access_token_env": _ENV_NAME,
        "device_name": {"type": "string", "minLength": 1, "maxLength": 100},
        "allowed": {"type": "array", "items": {"type": "string", "pattern": _MATRIX_USER}},
        "owner": {"type": ["string", "null"], "pattern": _MATRIX_USER},
        "group_mode": {"enum": ["mention", "all"]},
        "typing": {"type": "boolean"},
        "morning_digest": {"type": ["string", "null"], "pattern": "^([01][0-9]|2[0-3]):[0-5][0-9]$"},
    },
    # The bot needs its server and its own account to log in.
    "if": {"properties": {"enabled": {"const": True}}, "required": ["enabled"]},
    "then": {
        "required": ["homeserver", "user_id"],
        "properties": {"homeserver": {"minLength": 8}, "user_id": {"minLength": 3}},
    },
    "additionalProperties": False,
}

RUNTIME_SCHEMA = {
    "type": "object",
    "properties": {
        "timezone": {"type": "string", "minLength": 1},
        "skills_dirs": _STR_LIST,
        "collectors_dirs": _STR_LIST,
        "reply_footer": {"type": "boolean"},
        "base_prompt": {"type": ["string", "null"]},
        "history_budget_chars": {"type": "integer", "minimum": 0},
        "history_budget_tokens": {"type": ["integer", "null"], "minimum": 0},
        "context_budget_chars": {"type": "integer", "minimum": 0},
        "learnings_budget_chars": {"type": "integer", "minimum": 0},
        "profile_budget_chars": {"type": "integer", "minimum": 0},
        "section_caps": {"type": "object", "additionalProperties": {"type": "integer", "minimum": 0}},
        "skill_timeout_seconds": {"type": "number", "exclusiveMinimum": 0},
        "skill_timeouts": {"type": "object", "additionalProperties": {"type": "number", "exclusiveMinimum": 0}},
        "skill_result_limit_chars": {"type": "integer", "minimum": 100},
        "trace_keep": {"type": "integer", "minimum": 0},
        "shutdown_timeout_seconds": {"type": "number", "minimum": 0},
        "max_pending_per_chat": {"type": "integer", "minimum": 1},
        "busy_mode": {"enum": ["steer", "queue", "interrupt"]},
        "pairing": {"type": "boolean"},
        "pairing_code_minutes": {"type": "integer", "minimum": 1, "maximum": 10080},
        "log_level": {"enum": ["DEBUG", "INFO", "WARNING", "ERROR", None]},
    },
    "additionalProperties": False,
}

_NUMBER = {"type": "number", "minimum": 0}

MEMORY_SCHEMA = {
    "type": "object",
    "properties": {
        "enabled": {"type": "boolean"},
        "recall": {
            "type": "object",
            "properties": {
                "enabled": {"type": "boolean"},
                "limit": {"type": "integer", "minimum": 0},
                "budget_chars": {"type": "integer", "minimum": 0},
                "skip_recent_turns": {"type": "integer", "minimum": 0},
                "min_score": _NUMBER,
            },
            "additionalProperties": False,
        },
        "extract_facts": {"type": "boolean"},
        "extract_idle_seconds": {"type": "number", "minimum": 0},
        "episodes": {
            "oneOf": [
                {"type": "boolean"},
                {
                    "type": "object",
                    "properties": {
                        "enabled": {"type": "boolean"},
                        "settle_minutes": _NUMBER,
                        "max_per_run": {"type": "integer", "minimum": 1},
                        "min_turns": {"type": "integer", "minimum": 1},
                    },
                    "additionalProperties": False,
                },
            ]
        },
        "profile": {
            "oneOf": [
                {"type": "boolean"},
                {
                    "type": "object",
                    "properties": {"enabled": {"type": "boolean"}, "refresh_hours": _NUMBER},
                    "additionalProperties": False,
                },
            ]
        },
        "exclude_chats": {"type": "array", "items": {"type": ["string", "integer"]}},
        "share_owner_data_with": {"type": "array", "items": {"type": ["string", "integer"]}},
        "semantic_weight": _NUMBER,
        "refresh_seconds": _NUMBER,
        "ranking": {
            "type": "object",
            "properties": {
                **{
                    k: {"type": "number", "minimum": 0, "maximum": 100}
                    for k in (
                        "segment_weight",
                        "neighbour_weight",
                        "time_weight",
                        "date_weight",
                        "whole_segment_weight",
                    )
                },
                "segment_top": {"type": "integer", "minimum": 0, "maximum": 1000},
                "candidates": {"type": "integer", "minimum": 1, "maximum": 100_000},
                **{
                    k: {"type": "integer", "minimum": 0, "maximum": 10_000_000}
                    for k in ("newest_cap", "owner_cap", "unscoped_cap")
                },
            },
            "additionalProperties": False,
        },
    },
    "additionalProperties": False,
}

POLICY_SCHEMA = {
    "type": "object",
    "properties": {
        "capabilities": {
            "type": "object",
            "propertyNames": {"enum": ["read", "write", "delete", "network", "send", "exec"]},
            "additionalProperties": _DECISION,
        },
        "skills": {"type": "object", "additionalProperties": _DECISION},
        "allow_private_network": {"type": "boolean"},
        "guest_skills": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
    },
    "additionalProperties": False,
}

WEB_SCHEMA = {
    "type": "object",
    "properties": {
        "enabled": {"type": "boolean"},
        "chat": {"type": "boolean"},
        "host": {"type": "string", "minLength": 1},
        "port": {"type": "integer", "minimum": 0, "maximum": 65535},
        "token": {"type": "string"},
        "max_connections": {"type": "integer", "minimum": 1},
        "max_body_bytes": {"type": "integer", "minimum": 1024},
        "header_timeout_seconds": {"type": "number", "exclusiveMinimum": 0},
        "body_timeout_seconds": {"type": "number", "exclusiveMinimum": 0},
        "trusted_proxies": {"type": "array", "items": {"type": "string", "minLength": 1}, "maxItems": 64},
    },
    "additionalProperties": False,
}

SEARCH_SCHEMA = {
    "type": "object",
    "properties": {
        "backend": {"enum": ["searxng", "brave", "tavily", "duckduckgo"]},
        "url": _HTTP_URL,
        "api_key": {"type": "string"},
        "api_key_env": {"type": "string"},
        "max_results": {"type": "integer", "minimum": 1, "maximum": 10},
        "timeout_seconds": {"type": "number", "exclusiveMinimum": 0, "maximum": 120},
        "per_minute": {"type": "integer", "minimum": 1, "maximum": 1000},
    },
    "additionalProperties": False,
}

DOCUMENTS_SCHEMA = {
    "type": "object",
    "properties": {
        "max_mb": {"type": "number", "exclusiveMinimum": 0, "maximum": 2000},
        "max_pages": {"type": "integer", "minimum": 1, "maximum": 100000},
        "max_chars": {"type": "integer", "minimum": 1000, "maximum": 50000000},
        "prompt_chars": {"type": "integer", "minimum": 0, "maximum": 200000},
        "timeout_seconds": {"type": "number", "exclusiveMinimum": 0, "maximum": 3600},
    },
    "additionalProperties": False,
}

JOBS_SCHEMA = {
    "type": "object",
    "properties": {
        "max_jobs": {"type": "integer", "minimum": 0},
        "min_prompt_interval_minutes": {"type": "integer", "minimum": 1},
        "max_model_runs_per_day": {"type": "integer", "minimum": 0},
        "catch_up_max": {"type": "integer", "minimum": 1},
        "poll_seconds": {"type": "number", "exclusiveMinimum": 0},
    },
    "additionalProperties": False,
}

_CAPABILITY_LIST = {
    "type": "array",
    "items": {"enum": ["read", "write", "delete", "network", "send", "exec"]},
    "minItems": 1,
    "uniqueItems": True,
}
_MCP_SERVER_KEYS = {
    "enabled": {"type": "boolean"},
    "tools": {"type": "array", "items": {"type": "string", "minLength": 1}, "uniqueItems": True},
    "capabilities": _CAPABILITY_LIST,
    "tool_capabilities": {"type": "object", "additionalProperties": _CAPABILITY_LIST},
    "trusted": {"type": "boolean"},
    "timeout_seconds": {"type": "number", "exclusiveMinimum": 0, "maximum": 600},
    "description_chars": {"type": "integer", "minimum": 0, "maximum": 2000},
}
MCP_SERVER_SCHEMA = {
    "type": "object",
    "properties": {
        **_MCP_SERVER_KEYS,
        # stdio: the assistant starts the server as a child process.
        "command": {"type": "string", "minLength": 1},
        "args": _STR_LIST,
        "env": {"type": "object", "additionalProperties": {"type": "string"}},
        "cwd": {"type": "string", "minLength": 1},
        # streamable HTTP: the server runs on its own (checks.py: one of command or url).
        "url": _HTTP_URL,
        "headers": {"type": "object", "additionalProperties": {"type": "string"}},
    },
    "additionalProperties": False,
}
MCP_SCHEMA = {
    "type": "object",
    "properties": {
        "enabled": {"type": "boolean"},
        "timeout_seconds": {"type": "number", "exclusiveMinimum": 0, "maximum": 600},
        "servers": {
            "type": "object",
            # A server's name starts its tools' skill names: letters, digits and _ only.
            "propertyNames": {"pattern": "^[A-Za-z][A-Za-z0-9_]{0,23}$"},
            "additionalProperties": MCP_SERVER_SCHEMA,
        },
    },
    "additionalProperties": False,
}

SERVE_SCHEMA = {
    "type": "object",
    "properties": {
        "clients": {
            "type": "array",
            "maxItems": 64,
            "items": {
                "type": "object",
                "properties": {
                    # The source of its writes and its conversation id (api:<name>): no separators.
                    "name": {"type": "string", "pattern": "^[A-Za-z][A-Za-z0-9_-]{0,31}$"},
                    "token_env": {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]{0,127}$"},
                    "write": {"type": "boolean"},
                    "skills": {"type": "array", "items": {"type": "string", "minLength": 1}, "uniqueItems": True},
                    "owner": {"type": "boolean"},
                    "approve_in_chat": {"type": "boolean"},
                },
                "required": ["name", "token_env"],
                "additionalProperties": False,
            },
        },
        "per_minute": {"type": "integer", "minimum": 1, "maximum": 10000},
        "max_results": {"type": "integer", "minimum": 1, "maximum": 500},
    },
    "additionalProperties": False,
}

COLLECTORS_SCHEMA = {
    "type": "object",
    "additionalProperties": {
        "type": "object",
        "properties": {"enabled": {"type": "boolean"}},
    },
}

VOICE_SCHEMA = {
    "type": "object",
    "properties": {
        "reply": {"enum": ["off", "mirror", "always"]},
        "tts": {
            "type": "object",
            "properties": {
                "base_url": _HTTP_URL,
                "model": {"type": "string"},
                "voice": {"type": "string"},
                "api_key": {"type": "string"},
                "api_key_env": {"type": "string"},
                "timeout_seconds": {"type": "number", "exclusiveMinimum": 0},
            },
            "additionalProperties": False,
        },
        "max_chars": {"type": "integer", "minimum": 1},
    },
    "additionalProperties": False,
}

CALENDAR_SCHEMA = {
    "type": "object",
    "properties": {
        "url": _HTTP_URL,
        "username": {"type": "string"},
        "password": {"type": "string"},
        "password_env": {"type": "string"},
        "calendar": {"type": "string"},
        "timeout_seconds": {"type": "number", "exclusiveMinimum": 0, "maximum": 120},
        "days": {"type": "integer", "minimum": 1, "maximum": 366},
    },
    "additionalProperties": False,
}

MAIL_SCHEMA = {
    "type": "object",
    "properties": {
        "from": {"type": "string"},
        "smtp": {
            "type": "object",
            "properties": {
                "host": {"type": "string"},
                "port": {"type": "integer", "minimum": 1, "maximum": 65535},
                "security": {"enum": ["ssl", "starttls", "none"]},
                "user": {"type": "string"},
                "password": {"type": "string"},
                "password_env": {"type": "string"},
                "timeout_seconds": {"type": "number", "exclusiveMinimum": 0, "maximum": 120},
            },
            "additionalProperties": False,
        },
        "max_recipients": {"type": "integer", "minimum": 1, "maximum": 50},
    },
    "additionalProperties": False,
}

HOOKS_SCHEMA = {
    "type": "object",
    "properties": {
        "listen": {"type": "string", "minLength": 1},
        "port": {"type": "integer", "minimum": 0, "maximum": 65535},
        "max_body_bytes": {"type": "integer", "minimum": 1, "maximum": 4194304},
        "per_minute": {"type": "integer", "minimum": 1, "maximum": 1000},
        "endpoints": {
            "type": "object",
            "maxProperties": 64,
            # The path's last part: no separators, nothing to escape.
            "propertyNames": {"pattern": "^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$"},
            "additionalProperties": {
                "type": "object",
                "properties": {
                    "secret": {"type": "string"},
                    "secret_env": {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]{0,127}$"},
                    "message": {"type": "string", "minLength": 1, "maxLength": 4000},
                    "prompt": {"type": "string", "minLength": 1, "maxLength": 8000},
                    "job": {"type": "string", "minLength": 1},
                    "chat": {"type": "string"},
                },
                "additionalProperties": False,
            },
        },
    },
    "additionalProperties": False,
}

_MAIL_SERVER = {
    "type": "object",
    "properties": {
        "host": {"type": "string"},
        "port": {"type": "integer", "minimum": 1, "maximum": 65535},
        "security": {"enum": ["ssl", "starttls", "none"]},
        "user": {"type": "string"},
        "password": {"type": "string"},
        "password_env": {"type": "string"},
        "timeout_seconds": {"type": "number", "exclusiveMinimum": 0, "maximum": 120},
    },
    "additionalProperties": False,
}
_ADDRESS = "^[^@\\s<>]+@[^@\\s<>]+$"
EMAIL_SCHEMA = {
    "type": "object",
    "properties": {
        "enabled": {"type": "boolean"},
        "address": {"type": "string", "pattern": "^$|" + _ADDRESS},
        "imap": _MAIL_SERVER,
        "smtp": _MAIL_SERVER,
        "allowed": {"type": "array", "items": {"type": "string", "pattern": _ADDRESS}, "maxItems": 100},
        "owner": {"type": ["string", "null"], "pattern": _ADDRESS},
        "folder": {"type": "string", "minLength": 1},
        "poll_seconds": {"type": "number", "minimum": 0.5, "maximum": 3600},
        "trust": {"enum": ["auth-results", "any"]},
        "authserv_id": {"type": "string"},
        "max_mail_bytes": {"type": "integer", "minimum": 10000, "maximum": 50000000},
    },
    # The channel needs its own address (its replies come from it) and both servers.
    "if": {"properties": {"enabled": {"const": True}}, "required": ["enabled"]},
    "then": {
        "required": ["address", "imap", "smtp"],
        "properties": {
            "address": {"minLength": 3},
            "imap": {"required": ["host"], "properties": {"host": {"minLength": 1}}},
            "smtp": {"required": ["host"], "properties": {"host": {"minLength": 1}}},
        },
    },
    "additionalProperties": False,
}

ROOT_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {
        "llm": LLM_SCHEMA,
        "telegram": TELEGRAM_SCHEMA,
        "signal": SIGNAL_SCHEMA,
        "matrix": MATRIX_SCHEMA,
        "runtime": RUNTIME_SCHEMA,
        "memory": MEMORY_SCHEMA,
        "policy": POLICY_SCHEMA,
        "collectors": COLLECTORS_SCHEMA,
        "web": WEB_SCHEMA,
        "search": SEARCH_SCHEMA,
        "jobs": JOBS_SCHEMA,
        "voice": VOICE_SCHEMA,
        "mcp": MCP_SCHEMA,
        "serve": SERVE_SCHEMA,
        "calendar": CALENDAR_SCHEMA,
        "mail": MAIL_SCHEMA,
        "hooks": HOOKS_SCHEMA,
        "email": EMAIL_SCHEMA,
        "documents": DOCUMENTS_SCHEMA,
    },
}
