"""Durable inbox and outbound ledger: incoming messages survive a crash until their reply is sent.

Layout under the workspace (documented in docs/telegram.md):

- ``state/inbox/pending/<conversation>/<seq>.json``: one file per accepted, unanswered message,
  written atomically and fsynced before the platform is told it arrived (``accept``: before it returns;
  Telegram's polling: ``accept_many(synced=False)`` then ``sync_accepted`` before the next getUpdates
  offset, its turn running meanwhile), so the user's message survives a power loss once Telegram is told
  it arrived. It is never rewritten.
- ``state/inbox/pending/<conversation>/<seq>.ledger``: the outbound ledger beside it: the reply
  text once produced, ``live`` (the status/stream message shown while answering) and ``parts``
  (message ids of the reply parts already delivered, by part index). One JSON line appended per change,
  without fsync, because it is on the reply path: a killed process loses nothing (the page cache survives
  it); after a power loss it may be missing, empty or torn (a torn line is skipped), and then the reply
  is asked for again and a part may be sent twice.
- ``state/inbox/seen.log``: source ids (e.g. Telegram update ids) already accepted, one per line,
  each with the message's fingerprint when known (``77 1/5/1700000000``), so a message delivered
  twice is answered once, also across restarts, while a reused id for another message is not dropped.

``complete`` deletes the pending file, then its ledger. On start-up ``pending()`` lists what a crash left behind,
in arrival order per conversation; an item file that cannot be read is moved aside (``<seq>.json.broken-<time>``,
its ledger too) with one warning. ``live`` is the message shown while the reply was produced
(status line or streamed text), recorded when first sent: a replay finishes that message instead of
sending a second one. No Telegram imports: any frontend can use it.

The inbox and its pending items (store: ``Inbox``), one item and where it lives (item), the outbound
ledger beside it (ledger), the ids already accepted in seen.log and its compaction (seen), fsyncs made
together for a batch (fsync).
"""

from assistant_framework.inbox.item import PENDING_DIR, InboxItem, conversation_dir
from assistant_framework.inbox.seen import SEEN_KEEP, SEEN_LOG
from assistant_framework.inbox.store import AcceptBusy, Inbox

__all__ = ["PENDING_DIR", "SEEN_KEEP", "SEEN_LOG", "AcceptBusy", "Inbox", "InboxItem", "conversation_dir"]
