"""Config loading: one JSON/YAML file or a directory tree, env substitution, schema validation.

In a directory every file maps to a key by its path (``llm.json`` -> ``llm``,
``collectors/rss.json`` -> ``collectors.rss``); an ``index.json`` supplies its
folder's own key. Errors name the file and the JSON path inside it.

A directory config has a second, git-ignored layer in ``<dir>/local/`` (same layout),
merged over the rest: ``assistant config set`` and ``assistant setup`` write there, so
a user's settings and secrets never land in a tracked file.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from assistant_framework.config.limits import MAX_DEPTH, NoAliasLoader, json_too_deep, too_deep
from assistant_framework.config.schema import ROOT_SCHEMA
from assistant_framework.workspace import atomic_write_bytes

CONFIG_SUFFIXES = (".json", ".yaml", ".yml")
INDEX_STEM = "index"
#: The git-ignored layer of a config directory, merged over the tracked files.
LOCAL_DIR = "local"
TOKEN_ENV = "TELEGRAM_BOT_TOKEN"
_ENV_REF = re.compile(r"^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$")
#: Config and argument keys whose values are secrets (shared by config show, traces and the audit log).
SECRET_KEY = re.compile(r"(token|api_key|apikey|password|passwd|secret|credential)", re.IGNORECASE)
REDACTED = "***"


class ConfigError(Exception):
    """A config problem; the message names the file and the JSON path."""


@dataclass
class LoadedConfig:
    """A merged config plus where each part came from (for error messages and ``config set``)."""

    data: dict
    root: Path
    #: file -> key prefix it supplies, e.g. config/llm.json -> ("llm",), in merge order
    sources: dict[Path, tuple[str, ...]] = field(default_factory=dict)
    #: file -> its parsed content, to tell which layer holds a key
    raw: dict[Path, Any] = field(default_factory=dict)

    def source_of(self, path: tuple) -> tuple[Path, tuple]:
        """The file that supplied a JSON path, and the path relative to that file.

        The deepest prefix wins; between files with the same prefix (a tracked file and its
        local override) the later one wins when it holds the key.
        """
        best: tuple[Path, tuple[str, ...]] | None = None
        for file, prefix in self.sources.items():
            if tuple(path[: len(prefix)]) != prefix:
                continue
            if best is None or len(prefix) > len(best[1]) or (
                len(prefix) == len(best[1]) and _holds(self.raw.get(file), tuple(path[len(prefix):]))
            ):
                best = (file, prefix)
        if best is None:
            return self.root, tuple(path)
        return best[0], tuple(path[len(best[1]) :])


def _holds(data: Any, path: tuple) -> bool:
    """Whether ``data`` has a value at the first step of ``path`` (any value when path is empty)."""
    if not path:
        return data is not None
    return isinstance(data, dict) and path[0] in data


def format_json_path(path: tuple | list) -> str:
    """``("runners", 0, "base_url")`` -> ``runners[0].base_url``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "(top level)"


def _display(path: Path) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:
        return str(path)


def _parse_file(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{_display(path)}: cannot read: {exc.strerror}") from None
    if path.suffix == ".json":
        deep = json_too_deep(text)
        if deep is not None:
            raise ConfigError(f"{_display(path)}: line {deep[0]} column {deep[1]}: nested more than {MAX_DEPTH} "
                              "levels deep")
        try:
            value = json.loads(text) if text.strip() else {}
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{_display(path)}: line {exc.lineno} column {exc.colno}: invalid JSON: {exc.msg}") from None
    else:
        try:
            value = yaml.load(text, Loader=NoAliasLoader)  # noqa: S506 - a SafeLoader that also refuses aliases
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f"line {mark.line + 1} column {mark.column + 1}: " if mark else ""
            raise ConfigError(f"{_display(path)}: {where}invalid YAML: {getattr(exc, 'problem', exc)}") from None
        except RecursionError:
            raise ConfigError(f"{_display(path)}: nested more than {MAX_DEPTH} levels deep") from None
        value = {} if value is None else value
    deep_path = too_deep(value)
    if deep_path is not None:
        raise ConfigError(f"{_display(path)}: {format_json_path(deep_path)}: nested more than {MAX_DEPTH} levels deep")
    return value


def _config_files(root: Path, *, skip_local: bool = True) -> list[tuple[Path, tuple[str, ...]]]:
    """Every config file below ``root`` with the key prefix it supplies (index files first)."""
    found: list[tuple[Path, tuple[str, ...]]] = []
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if not path.is_file() or path.suffix not in CONFIG_SUFFIXES:
            continue
        if skip_local and rel.parts[0] == LOCAL_DIR:
            continue
        if any(part.startswith((".", "_")) for part in rel.parts):
            continue
        keys = tuple(rel.parent.parts)
        if path.stem != INDEX_STEM:
            keys += (path.stem,)
        found.append((path, keys))
    # Shorter prefixes first so a deeper file wins over its parent's index.
    found.sort(key=lambda item: (len(item[1]), item[0].stem != INDEX_STEM, str(item[0])))
    return found


def _set_path(target: dict, keys: tuple[str, ...], value: Any, file: Path) -> None:
    node = target
    for depth, key in enumerate(keys[:-1]):
        child = node.setdefault(key, {})
        if not isinstance(child, dict):
            raise ConfigError(f"{_display(file)}: key {'.'.join(keys[: depth + 1])} is already a {type(child).__name__} elsewhere")
        node = child
    if not keys:
        if not isinstance(value, dict):
            raise ConfigError(f"{_display(file)}: (top level): expected an object, got {type(value).__name__}")
        _deep_merge(target, value)
        return
    existing = node.get(keys[-1])
    if isinstance(existing, dict) and isinstance(value, dict):
        _deep_merge(existing, value)
    else:
        node[keys[-1]] = value


def _deep_merge(base: dict, extra: dict) -> None:
    for key, value in extra.items():
        if isinstance(base.get(key), dict) and isinstance(value, dict):
            _deep_merge(base[key], value)
        else:
            base[key] = value


def _substitute_env(value: Any, path: tuple, loaded: LoadedConfig) -> Any:
    if isinstance(value, dict):
        return {k: _substitute_env(v, path + (k,), loaded) for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute_env(v, path + (i,), loaded) for i, v in enumerate(value)]
    if isinstance(value, str):
        match = _ENV_REF.match(value.strip())
        if match:
            name = match.group(1)
            if name not in os.environ:
                file, rel = loaded.source_of(path)
                raise ConfigError(f"{_display(file)}: {format_json_path(rel)}: environment variable {name} is not set")
            return os.environ[name]
    return value


def load_config(path: str | os.PathLike[str], *, validate: bool = True, env: bool = True, local: bool = True) -> dict:
    """Load, merge, substitute and validate a config; raises ConfigError with file and path.

    ``local=False`` leaves out the ``local/`` layer (the tests of the example config do, so
    they never read a user's own settings).
    """
    return load_config_detailed(path, validate=validate, env=env, local=local).data


def load_config_detailed(path: str | os.PathLike[str], *, validate: bool = True, env: bool = True,
                         local: bool = True) -> LoadedConfig:
    """Like load_config, keeping which file supplied which key."""
    root = Path(path)
    if not root.exists():
        raise ConfigError(f"{_display(root)}: config file or directory does not exist")
    loaded = LoadedConfig(data={}, root=root)
    if root.is_file():
        value = _parse_file(root)
        if not isinstance(value, dict):
            raise ConfigError(f"{_display(root)}: (top level): expected an object, got {type(value).__name__}")
        loaded.data = value
        loaded.sources[root] = ()
        loaded.raw[root] = value
    else:
        files = _config_files(root)
        if local and (root / LOCAL_DIR).is_dir():
            files += _config_files(root / LOCAL_DIR, skip_local=False)
        for file, keys in files:
            value = _parse_file(file)
            _set_path(loaded.data, keys, value, file)
            loaded.sources[file] = keys
            loaded.raw[file] = value
    if env:
        loaded.data = _substitute_env(loaded.data, (), loaded)
        token = os.environ.get(TOKEN_ENV)
        if token:
            loaded.data.setdefault("telegram", {})
            if isinstance(loaded.data["telegram"], dict):
                loaded.data["telegram"]["token"] = token
    if validate:
        errors = validate_config(loaded)
        if errors:
            raise ConfigError("\n".join(errors))
    return loaded


def validate_config(loaded: LoadedConfig, extra_schemas: dict[str, dict] | None = None) -> list[str]:
    """All schema violations as ``file: json.path: message`` lines (empty when valid).

    ``extra_schemas`` maps a dotted key (``collectors.rss``) to a schema declared by a plugin.
    """
    from assistant_framework.config.checks import semantic_errors  # checks beyond JSON Schema

    messages: list[str] = []
    checks: list[tuple[tuple, dict, Any]] = [((), ROOT_SCHEMA, loaded.data)]
    for dotted, schema in (extra_schemas or {}).items():
        keys = tuple(dotted.split("."))
        value = get_key(loaded.data, dotted, default=None)
        if value is not None:
            checks.append((keys, schema, value))
    for prefix, schema, value in checks:
        validator = jsonschema.Draft202012Validator(schema)
        for error in sorted(validator.iter_errors(value), key=lambda e: [str(p) for p in e.absolute_path]):
            full = prefix + tuple(error.absolute_path)
            file, rel = loaded.source_of(full)
            messages.append(f"{_display(file)}: {format_json_path(rel)}: {_describe(error)}")
    for path, message in semantic_errors(loaded.data):
        file, rel = loaded.source_of(path)
        messages.append(f"{_display(file)}: {format_json_path(rel)}: {message}")
    return messages


def _describe(error: jsonschema.ValidationError) -> str:
    if error.validator == "additionalProperties":
        return f"{error.message} (check the spelling; see config/README.md for the known keys)"
    return error.message


# -- keys ---------------------------------------------------------------------


_KEY_PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def parse_key(dotted: str) -> tuple:
    """``llm.runners[0].model`` (or ``llm.runners.0.model``) -> ``("llm", "runners", 0, "model")``."""
    text = dotted.strip()
    parts: list = []
    pos = 0
    while pos < len(text):
        if text[pos] == "." and parts:
            pos += 1
        match = _KEY_PART.match(text, pos)
        if not match:
            raise ConfigError(f"config key {dotted!r}: cannot read it at {text[pos:]!r} (write e.g. llm.runners[0].model)")
        name, index = match.groups()
        parts.append(int(index) if index is not None else (int(name) if name.isdigit() else name))
        pos = match.end()
    if not parts or not isinstance(parts[0], str):
        raise ConfigError(f"config key {dotted!r} must start with a section name, e.g. llm.max_tokens")
    return tuple(parts)


def get_key(data: dict, dotted: str | tuple, default: Any = KeyError) -> Any:
    """The value at a key such as ``llm.runners[0].model``; raises KeyError naming it when missing."""
    node: Any = data
    parts = parse_key(dotted) if isinstance(dotted, str) else dotted
    for part in parts:
        if isinstance(node, dict) and str(part) in node:
            node = node[str(part)]
        elif isinstance(node, list) and isinstance(part, int) and part < len(node):
            node = node[part]
        else:
            if default is KeyError:
                raise KeyError(f"config key {dotted if isinstance(dotted, str) else format_json_path(dotted)!r} is not set")
            return default
    return node


def parse_cli_value(text: str) -> Any:
    """A CLI value: JSON when it parses, otherwise the string itself."""
    if json_too_deep(text) is not None:
        raise ConfigError(f"value nested more than {MAX_DEPTH} levels deep")
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def redact(value: Any, key: str = "") -> Any:
    """A copy with secrets (tokens, keys, passwords) replaced by ``***``."""
    if isinstance(value, dict):
        return {k: redact(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v, key) for v in value]
    if key and SECRET_KEY.search(key) and isinstance(value, str) and value:
        return REDACTED
    return value


def owner_file(config_root: Path, dotted: str | tuple) -> tuple[Path, tuple[str, ...]]:
    """The file of a config tree that owns a key, and the key path inside that file.

    A missing ``config_root`` ending in ``.json``/``.yaml`` is a single-file config (to be created).
    """
    keys = tuple(dotted.split(".")) if isinstance(dotted, str) else tuple(dotted)
    if config_root.is_file() or (not config_root.exists() and config_root.suffix in CONFIG_SUFFIXES):
        return config_root, keys
    # The deepest existing file wins: collectors/rss.json owns collectors.rss.enabled.
    for depth in range(len(keys), 0, -1):
        base = config_root.joinpath(*keys[:depth])
        for suffix in CONFIG_SUFFIXES:
            if base.with_name(base.name + suffix).is_file():
                return base.with_name(base.name + suffix), keys[depth:]
        for suffix in CONFIG_SUFFIXES:
            index = base / (INDEX_STEM + suffix)
            if index.is_file():
                return index, keys[depth:]
    # The root index file owns a section it already holds (e.g. index.json with "runtime").
    for suffix in CONFIG_SUFFIXES:
        index = config_root / (INDEX_STEM + suffix)
        if index.is_file():
            held = _parse_file(index)
            if isinstance(held, dict) and keys[0] in held:
                return index, keys
    # No file yet: descend existing folders, then name a new file after the next key.
    folder = config_root
    depth = 0
    while depth < len(keys) - 1 and (folder / keys[depth]).is_dir():
        folder = folder / keys[depth]
        depth += 1
    if depth == len(keys) - 1 and depth == 0:
        # A top-level scalar lives in the root index file.
        return config_root / "index.json", keys
    return folder / f"{keys[depth]}.json", keys[depth + 1 :]


def set_key(config_root: str | os.PathLike[str], dotted: str | tuple, value: Any) -> Path:
    """Write one value into the file that owns the key, atomically, keeping the file's style.

    JSON keeps its indentation and key order; a YAML file is rewritten without its comments.
    """
    file, inner = owner_file(Path(config_root), dotted)
    return set_in_file(file, inner, value, dotted)


def set_in_file(file: Path, inner: tuple, value: Any, dotted: str | tuple = "") -> Path:
    """Write ``value`` at the key path ``inner`` of one config file (created when missing), atomically."""
    data: Any = _parse_file(file) if file.exists() else {}
    if not inner:
        data = value
    else:
        if not isinstance(data, dict):
            raise ConfigError(f"{_display(file)}: (top level): expected an object to set {dotted!r} in")
        node = data
        for depth, key in enumerate(inner[:-1]):
            child = node.get(key)
            if child is None:
                child = node[key] = {}
            if not isinstance(child, dict):
                raise ConfigError(f"{_display(file)}: {format_json_path(inner[: depth + 1])}: is a {type(child).__name__}, cannot set {dotted!r} inside it")
            node = child
        node[inner[-1]] = value
    original = file.read_text(encoding="utf-8") if file.exists() else ""
    atomic_write_bytes(file, _dump_like(file, data, original).encode("utf-8"))
    return file


def _dump_like(file: Path, data: Any, original: str) -> str:
    if file.suffix in (".yaml", ".yml"):
        return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    indent: int | None = 2
    match = re.search(r"\n( +)\S", original)
    if match:
        indent = len(match.group(1))
    elif original.strip() and "\n" not in original.strip():
        indent = None
    text = json.dumps(data, indent=indent, ensure_ascii=False)
    return text + ("\n" if original.endswith("\n") or not original else "")
