"""The WhatsApp channel on Meta's official Cloud API (docs/whatsapp.md)."""
