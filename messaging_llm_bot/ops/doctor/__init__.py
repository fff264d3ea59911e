"""``assistant doctor``: every check with ok / warn / fail and what to do about it.

One module per area of checks, each a small function ``check_*(ctx) -> list[Check]``: the config (config), which
chat channels are on (channels; each channel's own checks are in its folder, ``ops/channels/<name>/doctor.py``,
beside the record: ops/channels/doctor.py), the model runners and their pictures (model), spending caps (spending),
the workspace and disk (workspace), the document readers' memory (documents), skills and collectors (plugins), MCP
servers (mcp), Python and the dependencies (python). The order they run in (run: ``run_checks``, which never raises:
a check that crashes is itself reported as a failure) and the report with its exit code (report).
"""
