"""CLI command groups; each module exposes ``register(subparsers)``."""


class UsageError(Exception):
    """A wrong argument (a missing folder, an unknown name): the CLI prints it and exits 2."""
