"""Who a chat channel answers: its section's ``allowed`` ids and its ``owner`` (null: the first allowed).

The Signal, Matrix, WhatsApp, Slack and Discord records share these questions; a record whose platform names a
sender otherwise than the config writes it (WhatsApp: ``+49...`` in the config, the digits from Meta; Signal: an
account UUID in lower case) says so in ``id_of``.
"""

from __future__ import annotations


class Allowlist:
    """The questions a channel asks of its record's ``allowed`` and ``owner`` (a mixin of the records).
    ``enabled``: the config turns the channel on (what a ``Route``'s ``configured`` reads of a channel's own
    section: ``settings.section(Allowlist, "<name>").enabled``)."""

    enabled: bool
    allowed: tuple[str, ...]
    owner: str | None

    def id_of(self, configured: str) -> str:
        """A configured id as the platform names a sender (the same, unless a record says otherwise)."""
        return configured

    @property
    def allowed_ids(self) -> tuple[str, ...]:
        return tuple(self.id_of(one) for one in self.allowed)

    @property
    def owner_id(self) -> str | None:
        """Whose chat sees the owner's data: ``owner``, else the first of ``allowed``, else None."""
        if self.owner:
            return self.id_of(self.owner)
        allowed = self.allowed_ids
        return allowed[0] if allowed else None

    def allows(self, sender: str) -> bool:
        """Deny by default: only the ids in ``allowed`` (the platform proves who the sender is)."""
        return sender in self.allowed_ids

    def is_owner(self, sender: str) -> bool:
        """The owner, and allowed (an owner left out of ``allowed`` is not served as one)."""
        return self.owner_id is not None and sender == self.owner_id and self.allows(sender)
