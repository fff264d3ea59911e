"""The Matrix channel (docs/matrix.md): a homeserver's client-server API through matrix-nio."""
