"""The web chat's part of the doctor: its page and its token (doctor)."""
