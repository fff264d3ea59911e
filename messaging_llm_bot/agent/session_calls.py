"""The agent's calls for a chat's conversations (/reset, /new, /sessions, /resume) and what its last prompt
held (/why): each one that changes what a turn reads takes the conversation's lock, so it waits for the turn
running there and the next turn sees the change."""

from __future__ import annotations

from messaging_llm_bot.agent.guard import CallGate
from messaging_llm_bot.agent.history import HistoryStore
from messaging_llm_bot.agent.locks import Conversations
from messaging_llm_bot.agent.sessions import Session, Sessions
from messaging_llm_bot.agent.turn import Hit


class SessionCalls:
    """Part of ``Agent`` (agent/loop.py): these calls use its conversation locks, history and session list."""

    _conversations: Conversations
    gate: CallGate
    history: HistoryStore
    sessions: Sessions
    _last_recall: dict[str, list[Hit]]
    _last_summary: dict[str, str]

    def reset(self, conversation_id: str) -> str:
        """Clear the history of this chat's (or topic's) active session; returns a sentence saying what was cleared."""
        with self._conversations.lock(conversation_id):
            session = self.sessions.active(conversation_id)
            count = self.history.clear(session)
            # What the owner allowed for this conversation was allowed for the content now cleared.
            self.gate.allowances.forget(session)
            self._last_recall.pop(conversation_id, None)
            self._last_summary.pop(conversation_id, None)
        if not count:
            return "This conversation had no history to clear. Notes, learnings and other saved data are kept."
        return (
            f"Cleared this conversation's history ({count} messages). Notes, learnings and other saved data are kept."
        )

    def new_session(self, conversation_id: str) -> tuple[Session, bool]:
        """Start a new session in this chat or topic: (it, True); (the active one, False) when that one has no
        history yet. The earlier sessions keep their history, log and memory."""
        with self._conversations.lock(conversation_id):
            empty = not self.history.load(self.sessions.active(conversation_id))
            made = self.sessions.new(conversation_id, current_empty=empty)
            self._last_recall.pop(conversation_id, None)
        return made

    def session_list(self, conversation_id: str) -> tuple[int, list[Session]]:
        """(the active session's number, the sessions of this chat or topic, oldest first)."""
        # No lock: a listing need not wait for the turn running here (the list has its own).
        return self.sessions.active_number(conversation_id), self.sessions.list(conversation_id)

    def resume(self, conversation_id: str, number: int) -> Session | None:
        """Make session ``number`` of this chat or topic the active one; None when there is no such session."""
        with self._conversations.lock(conversation_id):
            session = self.sessions.resume(conversation_id, number)
            if session is not None:
                self._last_recall.pop(conversation_id, None)
            return session

    def last_recall(self, conversation_id: str) -> list[Hit]:
        """The memory hits placed in the prompt of this conversation's last message."""
        return list(self._last_recall.get(conversation_id, []))

    def last_summary(self, conversation_id: str) -> str | None:
        """When the summary of earlier turns in the prompt of this conversation's last message was written
        ('' when unknown); None when that prompt had no summary."""
        return self._last_summary.get(conversation_id)
