"""What a file's entries become in the index tables: the ``entries`` rows, their FTS5 (words) and trigram
(CJK) rows, and for a conversation-day one ``segments`` document (its words counted, ``day_terms``); and their
removal.

Row ids are laid out by conversation: each conversation gets a slot (rows of no
conversation, the owner's data, are slot 0) and its rows take ids in
``[slot << 32, (slot + 1) << 32)``. FTS5 seeks a MATCH to a rowid range, so a search scoped
to one conversation reads and scores only that conversation's rows, however long the whole
log grows, while BM25 statistics stay those of the whole table (ranking is unchanged).
Which files to read and when is ``index.MemoryIndex``'s; every method here runs under its ``lock``.
"""

from __future__ import annotations

from .cjk import fold_words, has_cjk
from .index_db import IndexDatabase
from .log import safe_conversation_id
from .rowkeys import date_words, scope_token, slot_range
from .sources import Entry, time_to_ts


class IndexRows(IndexDatabase):
    """The rows side of ``MemoryIndex`` (its writer connection ``conn``)."""

    def _insert(self, entries: list[Entry]) -> None:
        if not entries:
            return
        cur = self.conn.cursor()
        next_ids: dict[int, int] = {}
        for e in entries:
            conversation = e.conversation
            if conversation is None and e.source in ("conversation", "episodes"):
                conversation = e.path.split("/")[-2]
            elif conversation is not None:
                conversation = safe_conversation_id(conversation)
            slot = self._slot(conversation, create=True)
            assert slot is not None  # create=True always gives a slot
            row_id = next_ids.get(slot) or self._next_id("entries", slot)
            next_ids[slot] = row_id + 1
            cur.execute(
                "INSERT INTO entries (id, path, source, ref, seq, time, ts, conversation, role, text, outside) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                (
                    row_id,
                    e.path,
                    e.source,
                    e.ref,
                    e.seq,
                    e.time,
                    time_to_ts(e.time),
                    conversation,
                    e.role,
                    e.text,
                    int(e.outside),
                ),
            )
            cur.execute(
                "INSERT INTO fts (rowid, body, date, scope) VALUES (?, ?, ?, ?)",
                (row_id, fold_words(e.text), date_words(e.time), scope_token(conversation)),
            )
            if has_cjk(e.text):
                # The word index cannot split CJK text into words; the trigram index finds substrings.
                cur.execute("INSERT INTO cjkfts (rowid, body) VALUES (?, ?)", (row_id, e.text))

    def _slot(self, conversation: str | None, create: bool = False) -> int | None:
        """The id slot of a conversation (0 for owner data); None when unknown and not created."""
        if conversation is None:
            return 0
        row = self.conn.execute("SELECT slot FROM slots WHERE conversation=?", (conversation,)).fetchone()
        if row is not None:
            known: int = row[0]
            return known
        if not create:
            return None
        slot: int = self.conn.execute("SELECT coalesce(max(slot), 0) + 1 FROM slots").fetchone()[0]
        self.conn.execute("INSERT INTO slots (conversation, slot) VALUES (?, ?)", (conversation, slot))
        return slot

    def _next_id(self, table: str, slot: int) -> int:
        # Read from the table, not cached: another MemoryIndex (CLI, a second service) may write too.
        low, high = slot_range(slot)
        top = self.conn.execute(f"SELECT max(id) FROM {table} WHERE id BETWEEN ? AND ?", (low, high)).fetchone()[0]
        if top is not None and top >= high:
            raise OverflowError(f"memory index: id slot {slot} of table {table} is full")
        return (top + 1) if top is not None else low + 1

    def _update_segment(self, rel: str, source: str) -> None:
        """One conversation-day as a whole document, for ranking segments before turns: its words counted
        (``day_terms``), made from all of the day's rows."""
        if source != "conversation":
            return
        rows = self.conn.execute("SELECT text, conversation FROM entries WHERE path=? ORDER BY seq", (rel,)).fetchall()
        old = self.conn.execute("SELECT id FROM segments WHERE path=?", (rel,)).fetchone()
        self._delete_segment(rel)
        if rows:
            # Keep the segment's id on re-insert, so its slot (its conversation's id range) holds.
            seg_id = old[0] if old else self._next_id("segments", self._slot(rows[0][1], create=True) or 0)
            self.conn.execute(
                "INSERT INTO segments (id, path, conversation) VALUES (?, ?, ?)", (seg_id, rel, rows[0][1])
            )
            self.conn.execute("UPDATE segstats SET days = days + 1")
            self._count_words(seg_id, "\n".join(r[0] for r in rows), new_day=True)

    def _extend_segment(self, rel: str, source: str, entries: list[Entry]) -> None:
        """Lines appended to a conversation-day (``entries``, after every row the day had): the day gains their
        words, as ``_update_segment`` would count them again from all of the day's rows. Only the new text is
        tokenized: the day's whole document, rewritten per turn, cost a day's turns its length squared."""
        if source != "conversation" or not entries:
            return
        row = self.conn.execute("SELECT id FROM segments WHERE path=?", (rel,)).fetchone()
        if row is None:  # the day's first rows, or its segment gone: made from all of them
            self._update_segment(rel, source)
            return
        self._count_words(row[0], "\n".join(e.text for e in entries))

    def _count_words(self, seg_id: int, text: str, new_day: bool = False) -> None:
        """Add ``text``'s words to a day's counts, and a day to each word's day count where it is new there."""
        self._cut_words(text)
        try:
            added = self.conn.execute("SELECT total(cnt) FROM temp.counts").fetchone()[0]
            if not added:
                return
            # A day more for each word the day did not hold yet (before its counts below make it hold them).
            self.conn.execute(
                "INSERT INTO segdf (term, df) SELECT term, 1 FROM temp.counts c "
                + (
                    "WHERE true "
                    if new_day
                    else "WHERE NOT EXISTS (SELECT 1 FROM segterms WHERE term=c.term AND seg=?) "
                )
                + "ON CONFLICT (term) DO UPDATE SET df = df + 1",
                () if new_day else (seg_id,),
            )
            self.conn.execute(
                "INSERT INTO segterms (term, seg, tf) SELECT term, ?, cnt FROM temp.counts WHERE true "
                "ON CONFLICT (term, seg) DO UPDATE SET tf = tf + excluded.tf",
                (seg_id,),
            )
            self.conn.execute("UPDATE segments SET tokens = tokens + ? WHERE id=?", (int(added), seg_id))
            self.conn.execute("UPDATE segstats SET tokens = tokens + ?", (int(added),))
        finally:
            self.conn.execute("INSERT INTO temp.words (words) VALUES ('delete-all')")

    def _cut_words(self, text: str) -> None:
        """``text`` (folded) into the writer's scratch FTS5 table (made as the connection opens): its words counted
        in ``temp.counts``."""
        self.conn.execute("INSERT INTO temp.words (rowid, body) VALUES (1, ?)", (fold_words(text),))

    def _day_counts(self, seg_id: int, words: list[str]) -> dict[str, int]:
        """The day's counts of these words (the ones it holds)."""
        held: dict[str, int] = {}
        for start in range(0, len(words), 500):
            part = words[start : start + 500]
            held.update(
                self.conn.execute(
                    f"SELECT term, tf FROM segterms WHERE seg=? AND term IN ({','.join('?' * len(part))})",
                    (seg_id, *part),
                )
            )
        return held

    def _delete_segment(self, rel: str) -> None:
        row = self.conn.execute("SELECT id, tokens FROM segments WHERE path=?", (rel,)).fetchone()
        if not row:
            return
        seg_id, tokens = row
        # The counts are keyed word first (recall reads a word's days), so the day's words are found from its rows,
        # still there: counted again, as a re-read of the file does anyway.
        texts = self.conn.execute("SELECT text FROM entries WHERE path=?", (rel,))
        self._cut_words("\n".join(t for (t,) in texts))
        try:
            held = self._day_counts(seg_id, [w for (w,) in self.conn.execute("SELECT term FROM temp.counts")])
        finally:
            self.conn.execute("INSERT INTO temp.words (words) VALUES ('delete-all')")
        if sum(held.values()) != tokens:  # rows gone before their day (a purged source): every word's row read
            held = dict(self.conn.execute("SELECT term, tf FROM segterms WHERE seg=?", (seg_id,)))
        self.conn.executemany("DELETE FROM segterms WHERE term=? AND seg=?", ((w, seg_id) for w in held))
        self.conn.executemany("UPDATE segdf SET df = df - 1 WHERE term=?", ((w,) for w in held))
        self.conn.executemany("DELETE FROM segdf WHERE term=? AND df <= 0", ((w,) for w in held))
        self.conn.execute("DELETE FROM segments WHERE id=?", (seg_id,))
        self.conn.execute("UPDATE segstats SET days = days - 1, tokens = tokens - ?", (tokens,))

    def _delete_rows(self, rel: str) -> None:
        self._delete_segment(rel)
        ids = [r[0] for r in self.conn.execute("SELECT id FROM entries WHERE path=?", (rel,))]
        self.conn.executemany("DELETE FROM fts WHERE rowid=?", ((i,) for i in ids))
        self.conn.executemany("DELETE FROM cjkfts WHERE rowid=?", ((i,) for i in ids))
        self.conn.execute("DELETE FROM entries WHERE path=?", (rel,))
