"""A served client's ``ask`` call with ``approve_in_chat`` is asked in the terminal chat when it is the home channel
(no chat channel configured; conversation/job_router.py's ``ChannelJobs.ask_owner``): the question printed at the
prompt, the owner's y or n typed there answers it, and the answer is no message for the model. Through the real
console process on a pseudo-terminal (``--frontend console``, the web page in the same process), the fake model
server and the served endpoint."""

from __future__ import annotations

import concurrent.futures
import json
import re
import sys
from pathlib import Path

import pytest
import requests

from assistant_framework.workspace import Workspace
from tests.console_harness import Terminal, write_config
from tests.test_serve_approve_home import SERVE, TOKEN, model

pytest.importorskip("pty", reason="needs a POSIX pseudo-terminal")


@pytest.mark.timeout(120)
def test_a_served_clients_ask_is_asked_at_the_terminal_prompt(tmp_path: Path, chat_server, test_skills_dir) -> None:
    chat_server.set_handler(model)
    config = write_config(tmp_path / "config", chat_server.base_url, test_skills_dir)
    (config / "web.json").write_text(json.dumps({"enabled": True, "port": 0}))
    (config / "serve.json").write_text(json.dumps(SERVE))
    (config / "policy.json").write_text(json.dumps({"skills": {"save_note": "ask"}}))
    workspace = Workspace(tmp_path / "ws").root  # an existing workspace: a new one would be asked about
    argv = [sys.executable, "-m", "messaging_llm_bot", "--frontend", "console", "--config", str(config)]
    term = Terminal([*argv, "--workspace", str(workspace)], env={"ASKER_TOKEN": TOKEN})
    try:
        term.wait_for("you> ")
        port = re.search(r"web page: http://127\.0\.0\.1:(\d+)/", term.output)
        assert port, term.output

        def create(text: str) -> str:
            answer = requests.post(
                f"http://127.0.0.1:{port.group(1)}/v1/chat/completions",
                json={"model": "assistant", "messages": [{"role": "user", "content": text}]},
                headers={"Authorization": f"Bearer {TOKEN}"},
                timeout=60,
            )
            assert answer.status_code == 200, answer.text
            return answer.json()["choices"][0]["message"]["content"]

        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            # Confirmed at the prompt: the call runs and the client gets its result.
            pending = pool.submit(create, "save a note kept")
            term.wait_for("[y/N]")
            question = term.output[term.output.index("Confirm this action?") :]
            assert "save_note" in question and "served client 'asker'" in question
            assert not (workspace / "notes" / "kept.md").exists()
            mark = len(term.output)
            term.type("y\r")
            assert "Result of skill 'save_note'" in pending.result(timeout=60)
            assert (workspace / "notes" / "kept.md").exists()

            # Declined at the prompt: nothing is written.
            pending = pool.submit(create, "save a note dropped")
            term.wait_for("[y/N]", start=mark)
            term.type("n\r")
            declined = pending.result(timeout=60)
            assert "The owner did not confirm this call" in declined, declined
            assert not (workspace / "notes" / "dropped.md").exists()

        # The answers were no messages of the terminal's: the chat goes on, and the next line is a message.
        mark = len(term.output)
        term.type("hello\r")
        term.wait_for("ok\r\n", start=mark)
        term.wait_for("you> ", start=term.output.index("ok\r\n", mark))  # reading again: Ctrl-D ends the input
        term.type("\x04")  # Ctrl-D
        assert term.proc.wait(30) == 0
    finally:
        term.close()
    asked = [r["messages"][-1]["content"] for r in chat_server.chat_requests if r.get("messages")]
    assert not any(text.strip() in ("y", "n") for text in asked), asked
