"""CLI command groups; each module exposes ``register(subparsers)``."""


class UsageError(Exception):
    """A wrong argument (a missing folder, an unknown name): the CLI prints it and exits 2."""


def int_range(low: int, high: int | None = None):
    """An argparse ``type`` for a whole number in [low, high]: a value outside is a usage error (exit 2)."""
    import argparse

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid whole number: {text!r}") from None
        if value < low or (high is not None and value > high):
            raise argparse.ArgumentTypeError(
                f"{value} is out of range ({low}..{high})" if high is not None else f"{value} is below {low}"
            )
        return value

    return parse
