"""The stdio transport to a server, with the bounds an outside server's output needs.

The SDK's own ``stdio_client`` keeps a line until its end however long it grows (and joins it again for each
64 KB read: a 30 MB answer cost 11 s of the loop every server shares, a line without an end grows without
bound) and builds every part of an answer before anything counts them (a 30 MB answer of a million empty parts
took 2 GB). Here a message is read in time linear in its size, one over ``MAX_MESSAGE_BYTES`` ends the
connection (the connection restarts the server and says why, ``ServerOutput.refused``), and an answer's parts
past ``MAX_PARTS`` are dropped before they are built (bounds.py, for both transports). Starting the process and
stopping it are the SDK's own, unchanged: its module's private helpers (mcp 2.3), so an SDK that renames one fails
tests/test_mcp_servers.py, which starts real servers through them, before a user sees it.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import TextIO

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp import StdioServerParameters
from mcp.client import stdio as sdk
from mcp.client._transport import TransportStreams
from mcp.os.win32.utilities import ServerProcess
from mcp.shared.message import SessionMessage

from assistant_framework.mcp.bounds import CHECKED_ABOVE, MAX_MESSAGE_BYTES, TOO_LARGE, cut_parts


class ServerOutput:
    """What a connection learns from the transport: why it ended a connection (empty while none)."""

    def __init__(self) -> None:
        self.refused = ""


def _message(line: bytes) -> SessionMessage | Exception:
    """One line as a message; an answer's parts past ``MAX_PARTS`` dropped first and counted in its ``_meta``."""
    try:
        if len(line) > CHECKED_ABOVE:
            found = cut_parts(json.loads(line))
            return SessionMessage(types.jsonrpc_message_adapter.validate_python(found, by_name=False))
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:  # as the SDK's reader: the session surfaces it
        return exc


async def _read(
    process: ServerProcess, messages: MemoryObjectSendStream[SessionMessage | Exception], output: ServerOutput
) -> None:
    """The server's stdout into ``messages``, a line at a time, each within ``MAX_MESSAGE_BYTES``."""
    assert process.stdout is not None
    line = bytearray()
    try:
        async with messages:
            async for chunk in process.stdout:
                start = 0
                while (end := chunk.find(b"\n", start)) >= 0:
                    line += chunk[start:end]
                    start = end + 1
                    await messages.send(_message(bytes(line)))
                    line.clear()
                line += chunk[start:]
                if len(line) > MAX_MESSAGE_BYTES:
                    output.refused = f"it sent {TOO_LARGE}"
                    return  # the session ends (its calls fail), the server is stopped; the rest is drained below
    except (anyio.ClosedResourceError, anyio.BrokenResourceError, ConnectionError):
        pass  # the session or our own shutdown is gone: nothing waits for the rest
    finally:
        line.clear()
        await sdk._drain_stdout(process)


async def _write(
    process: ServerProcess,
    requests: MemoryObjectReceiveStream[SessionMessage],
    messages: MemoryObjectSendStream[SessionMessage | Exception],
    server: StdioServerParameters,
    done: anyio.Event,
) -> None:
    """The session's messages to the server's stdin, one line each."""
    assert process.stdin is not None
    try:
        async with requests:
            async for request in requests:
                text = request.message.model_dump_json(by_alias=True, exclude_unset=True)
                await process.stdin.send((text + "\n").encode(server.encoding, server.encoding_error_handler))
    except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        await messages.aclose()  # a request must not wait for an answer that cannot come
    finally:
        done.set()


@asynccontextmanager
async def bounded_stdio_client(
    server: StdioServerParameters, errlog: TextIO, output: ServerOutput
) -> AsyncGenerator[TransportStreams, None]:
    """``mcp.client.stdio.stdio_client`` with its reader bounded (see the module's text)."""
    command = await sdk._get_executable_command(server.command)
    process = await sdk._create_platform_compatible_process(
        command=command,
        args=server.args,
        env=sdk.get_default_environment() | (server.env or {}),
        errlog=errlog,
        cwd=server.cwd,
    )
    messages, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, requests = anyio.create_memory_object_stream[SessionMessage](0)
    written = anyio.Event()

    async def shutdown() -> None:  # the SDK's order: stop traffic, flush, stop the server, close the streams
        read_stream.close()
        write_stream.close()
        with anyio.move_on_after(sdk._WRITER_FLUSH_TIMEOUT):
            await written.wait()
        await sdk._stop_server_process(process)
        await sdk._aclose_all(read_stream, write_stream, messages, requests)
        await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as group:
        group.start_soon(_read, process, messages, output)
        group.start_soon(_write, process, requests, messages, server, written)
        try:
            yield read_stream, write_stream
        finally:
            with anyio.CancelScope(shield=True):  # as the SDK's: the server must not outlive a cancelled caller
                await shutdown()
            group.cancel_scope.cancel()
