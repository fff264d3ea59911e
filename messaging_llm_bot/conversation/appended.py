"""A turn's progress on a channel that can only append what it shows (the terminal prints, it cannot edit; the
edited status line and live message are progress.py's): a note for each step worth telling, and the answer as it
streams, with what of the final reply is still to show."""

from __future__ import annotations

from typing import TextIO

from messaging_llm_bot.agent.turn import AgentEvent, error_for_user


def progress_note(event: AgentEvent) -> str | None:
    """A short line for a progress event, or None for events not worth showing."""
    if event.kind == "thinking":
        return f"… thinking (round {event.data.get('round')})"
    if event.kind == "skill_call":
        return f"… running skill {event.data.get('skill')}"
    if event.kind == "skill_result" and not event.data.get("ok"):
        skill = str(event.data.get("skill"))
        return f"… skill {skill} failed: {error_for_user(skill, str(event.data.get('summary')))}"
    return None


class LiveReply:
    """The answer written to ``out`` as it streams in, a note for each step worth telling on ``notes`` (None: not
    shown); ``rest(block)`` is what of the final reply block is still to write."""

    def __init__(self, out: TextIO, notes: TextIO | None = None) -> None:
        self.out, self.notes = out, notes
        self.shown = ""

    def on_event(self, event: AgentEvent) -> None:
        """The turn's progress (from its worker thread): the answer's new text, or a note."""
        if event.kind == "delta":
            self.delta(str(event.data.get("text", "")))
        elif self.notes is not None and (note := progress_note(event)):
            print(note, file=self.notes, flush=True)

    def delta(self, text: str) -> None:
        """Write what ``text`` (the visible answer so far) adds to what is shown."""
        # A later round starts its answer afresh: it goes on a new line rather than being glued on.
        piece = text[len(self.shown) :] if text.startswith(self.shown) else "\n" + text
        self.shown = text
        if piece:
            self.out.write(piece)
            self.out.flush()

    def rest(self, block: str) -> str:
        """The part of the reply block not shown yet (all of it when nothing was streamed)."""
        shown = self.shown.rstrip()  # the final reply is stripped; a space already written does no harm
        if not shown:
            return block
        return block[len(shown) :] if block.startswith(shown) else "\n" + block
