"""The JSON shapes of the Chat Completions API as this package passes them around.

They stay plain dicts (the server's answer and the request body are JSON, extended by each server and
by ``extra`` from the config); these names say which shape a function takes or returns.
"""

from __future__ import annotations

from assistant_framework.json_types import JsonObject

__all__ = ["JsonObject", "Message"]

#: One chat message as sent to the model: ``{"role": ..., "content": ...}`` where content is text or a
#: list of parts (text, images), plus ``tool_calls`` / ``tool_call_id`` / ``name`` on native tool turns.
Message = JsonObject
# JsonObject (the framework's one name for arbitrary JSON) is a JSON object of the API here: a request body,
# a decoded answer or chunk, a tool spec, a JSON Schema.
