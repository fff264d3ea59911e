"""The assistant framework: workspace, config, skills, collectors, memory, traces and the CLI."""

from importlib import metadata as _metadata


def version() -> str:
    """The installed package version (``assistant --version``, ``assistant-bot --version``)."""
    try:
        return _metadata.version("assistant-framework")
    except _metadata.PackageNotFoundError:  # run from a source tree without installing
        return "0+unknown"
