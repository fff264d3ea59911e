"""LoCoMo retrieval benchmark for the memory search.

Each conversation is ingested through the live path (``MemoryService.log_turn`` into the
L0 log, dated by its chat segment, then the index); each question goes through
``MemoryService.search`` limited to its conversation. Figures follow
the LoCoMo paper and docs/benchmarks.md: turn_recall@5/@10 and session_recall@5 over
categories 1-4 with non-empty normalised evidence ("overall"); category 5 is reported
apart. No model calls.

    python bench/locomo.py [--data PATH] [--limit-conversations N | --conversations conv-26,conv-30]
                           [--embed wordllama --semantic-weight W] [--json]

Without ``--data`` the public LoCoMo release (``LOCOMO_URL``, pinned to one commit, checked by
its SHA-256; licence CC BY-NC 4.0) is downloaded once into ``~/.cache/assistant-framework/locomo/``
(``$XDG_CACHE_HOME`` respected) and its five development conversations (``DEV_CONVERSATIONS``)
are used unless ``--conversations`` names others. ``--data FILE`` uses that file as it is.

``--embed wordllama`` fuses the local static embedder (``pip install '.[semantic]'``) into
the ranking with ``memory.semantic_weight`` W; still no model server and no network.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import statistics
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from assistant_framework.memory import MemoryService  # noqa: E402
from assistant_framework.workspace import Workspace  # noqa: E402

LOCOMO_URL = (
    "https://raw.githubusercontent.com/snap-research/locomo/3eb6f2c585f5e1699204e3c3bdf7adc5c28cb376/data/locomo10.json"
)
LOCOMO_SHA256 = "79fa87e90f04081343b8c8debecb80a9a6842b76a7aa537dc9fdf651ea698ff4"
LOCOMO_LICENCE = "CC BY-NC 4.0 (snap-research/locomo; Maharana et al., ACL 2024)"
#: The development split the documented figures use; the other five are kept for evaluation.
DEV_CONVERSATIONS = ("conv-26", "conv-30", "conv-41", "conv-42", "conv-43")
OVERALL_CATEGORIES = ("1", "2", "3", "4")
RETRIEVE = 50


def cache_dir() -> Path:
    """Where the downloaded data set is kept: ``$XDG_CACHE_HOME`` or ``~/.cache``, then
    ``assistant-framework/locomo``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "assistant-framework" / "locomo"


def ensure_dataset(
    url: str = LOCOMO_URL, folder: Path | None = None, sha256: str = LOCOMO_SHA256, timeout: float = 60.0
) -> Path:
    """The cached data file, downloaded on first use and checked by its SHA-256.

    RuntimeError (naming the URL) when the download fails or the bytes are not the expected ones;
    nothing is cached then, and a partial download never is (atomic write).
    """
    import requests

    from assistant_framework.workspace import atomic_write_bytes

    target = (folder or cache_dir()) / url.rsplit("/", 1)[-1]
    if target.exists() and hashlib.sha256(target.read_bytes()).hexdigest() == sha256:
        return target
    try:
        response = requests.get(url, timeout=timeout)
        response.raise_for_status()
    except requests.RequestException as exc:
        raise RuntimeError(f"could not download the LoCoMo data from {url}: {exc}") from None
    digest = hashlib.sha256(response.content).hexdigest()
    if digest != sha256:
        raise RuntimeError(f"the LoCoMo data from {url} has SHA-256 {digest}, expected {sha256}; not used")
    atomic_write_bytes(target, response.content)
    print(f"downloaded {url} ({len(response.content):,} bytes, licence {LOCOMO_LICENCE}) to {target}", file=sys.stderr)
    return target


def parse_session_time(text: str) -> datetime:
    """'1:56 pm on 8 May, 2023' -> aware UTC datetime."""
    cleaned = re.sub(r"\s+", " ", text.strip())
    for fmt in ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y", "%I:%M %p on %B %d, %Y"):
        try:
            return datetime.strptime(cleaned, fmt).replace(tzinfo=timezone.utc)
        except ValueError:
            continue
    raise ValueError(f"LoCoMo session time {text!r} is not in the expected format")


def sessions(conversation: dict) -> list[tuple[int, datetime, list[dict]]]:
    """(number, time, turns) for every segment that has turns, in order."""
    found = []
    for key, turns in conversation.items():
        match = re.fullmatch(r"session_(\d+)", key)
        if match and isinstance(turns, list) and turns:
            n = int(match.group(1))
            found.append((n, parse_session_time(conversation[f"session_{n}_date_time"]), turns))
    return sorted(found, key=lambda item: item[0])


def normalise_evidence(evidence: list, known: set[str]) -> list[str]:
    """Split joined ids, fix 'D:11:26' and zero padding, drop ids absent from the conversation."""
    ids: list[str] = []
    for raw in evidence or []:
        for part in re.split(r"[;\s]+", str(raw)):
            match = re.fullmatch(r"D:?(\d+):0*(\d+)", part.strip())
            if match:
                dia = f"D{int(match.group(1))}:{int(match.group(2))}"
                if dia in known and dia not in ids:
                    ids.append(dia)
    return ids


def ingest(service: MemoryService, sample: dict) -> dict[str, str]:
    """Log every turn of one sample; returns turn_id -> dia_id."""
    conv = sample["conversation"]
    roles = {conv.get("speaker_a"): "user", conv.get("speaker_b"): "assistant"}
    mapping: dict[str, str] = {}
    for _, start, turns in sessions(conv):
        for k, turn in enumerate(turns):
            meta = {"speaker": turn.get("speaker"), "dia_id": turn.get("dia_id")}
            if turn.get("blip_caption"):
                meta["caption"] = turn["blip_caption"]
            row = service.log_turn(
                sample["sample_id"],
                roles.get(turn.get("speaker"), "user"),
                turn.get("text", ""),
                time=start + timedelta(seconds=k),
                meta=meta,
            )
            mapping[row["turn_id"]] = turn["dia_id"]
    return mapping


def recall_at(ranked: list[str], evidence: list[str], k: int) -> float:
    return len(set(ranked[:k]) & set(evidence)) / len(evidence)


def session_of(dia: str) -> str:
    return dia.split(":")[0]


def ranked_sessions(ranked: list[str]) -> list[str]:
    seen: list[str] = []
    for dia in ranked:
        s = session_of(dia)
        if s not in seen:
            seen.append(s)
    return seen


def select(samples: list[dict], limit_conversations: int | None, conversations: list[str] | None) -> list[dict]:
    """The first N samples, or those named by sample_id (ValueError naming unknown ids)."""
    if conversations:
        known = {s["sample_id"] for s in samples}
        unknown = [c for c in conversations if c not in known]
        if unknown:
            raise ValueError(f"LoCoMo conversations {', '.join(unknown)} are not in the data file")
        samples = [s for s in samples if s["sample_id"] in conversations]
    if limit_conversations:
        samples = samples[:limit_conversations]
    return samples


def with_semantic_weight(config: dict | None, weight: float | None) -> dict:
    """The bench config with ``memory.semantic_weight`` set (other memory keys kept)."""
    config = dict(config or {"runtime": {"timezone": "UTC"}})
    if weight is not None:
        config["memory"] = {**(config.get("memory") or {}), "semantic_weight": weight}
    return config


def run(
    data_path: Path,
    limit_conversations: int | None = None,
    config: dict | None = None,
    *,
    conversations: list[str] | None = None,
    embed: Callable[[list[str]], list[list[float]]] | None = None,
) -> dict:
    samples = select(json.loads(Path(data_path).read_text(encoding="utf-8")), limit_conversations, conversations)
    scores: dict[str, list[tuple[float, float, float]]] = {}
    latencies: list[float] = []
    ingest_turns, ingest_seconds = 0, 0.0
    with tempfile.TemporaryDirectory(prefix="locomo-") as tmp:
        service = MemoryService(Workspace(tmp), config or {"runtime": {"timezone": "UTC"}}, embed=embed)
        try:
            for sample in samples:
                started = time.perf_counter()
                mapping = ingest(service, sample)
                ingest_seconds += time.perf_counter() - started
                ingest_turns += len(mapping)
                known = set(mapping.values())
                last = sessions(sample["conversation"])[-1][1] + timedelta(days=1)
                for qa in sample.get("qa", []):
                    evidence = normalise_evidence(qa.get("evidence"), known)
                    if not evidence:
                        continue
                    started = time.perf_counter()
                    hits = service.search(
                        str(qa["question"]), limit=RETRIEVE, conversation=sample["sample_id"], now=last
                    )
                    latencies.append((time.perf_counter() - started) * 1000)
                    ranked = [mapping[h.ref] for h in hits if h.ref in mapping]
                    ev_sessions = sorted({session_of(d) for d in evidence})
                    figures = (
                        recall_at(ranked, evidence, 5),
                        recall_at(ranked, evidence, 10),
                        recall_at(ranked_sessions(ranked), ev_sessions, 5),
                    )
                    scores.setdefault(str(qa.get("category")), []).append(figures)
        finally:
            service.close()
    return summarise(scores, latencies, ingest_turns, ingest_seconds)


def _means(rows: list[tuple[float, float, float]]) -> dict:
    if not rows:
        return {"turn_recall@5": 0.0, "turn_recall@10": 0.0, "session_recall@5": 0.0, "questions": 0}
    return {
        "turn_recall@5": round(statistics.fmean(r[0] for r in rows), 4),
        "turn_recall@10": round(statistics.fmean(r[1] for r in rows), 4),
        "session_recall@5": round(statistics.fmean(r[2] for r in rows), 4),
        "questions": len(rows),
    }


def summarise(scores: dict, latencies: list[float], turns: int, seconds: float) -> dict:
    overall_rows = [r for c in OVERALL_CATEGORIES for r in scores.get(c, [])]
    overall = _means(overall_rows)
    ordered = sorted(latencies)

    def pct(p: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(p * len(ordered)))], 3) if ordered else 0.0

    return {
        "overall": {k: v for k, v in overall.items() if k != "questions"},
        "by_category": {c: _means(scores[c]) for c in sorted(scores)},
        "ingest_turns_per_s": round(turns / seconds, 1) if seconds else 0.0,
        "query_ms_p50": pct(0.5),
        "query_ms_p95": pct(0.95),
        "questions": overall["questions"],
    }


def print_table(result: dict) -> None:
    print(f"{'category':<12}{'questions':>10}{'turn_r@5':>10}{'turn_r@10':>11}{'sess_r@5':>10}")
    for cat, row in result["by_category"].items():
        print(
            f"{cat:<12}{row['questions']:>10}{row['turn_recall@5']:>10.3f}{row['turn_recall@10']:>11.3f}{row['session_recall@5']:>10.3f}"
        )
    o = result["overall"]
    print(
        f"{'overall 1-4':<12}{result['questions']:>10}{o['turn_recall@5']:>10.3f}{o['turn_recall@10']:>11.3f}"
        f"{o['session_recall@5']:>10.3f}"
    )
    print(
        f"ingest: {result['ingest_turns_per_s']:.0f} turns/s; query latency p50 {result['query_ms_p50']:.2f} ms, p95 "
        f"{result['query_ms_p95']:.2f} ms"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="LoCoMo retrieval benchmark of the memory search (no model calls).")
    parser.add_argument(
        "--data",
        type=Path,
        default=None,
        help="LoCoMo-format JSON file (default: the public release, downloaded once to the cache)",
    )
    parser.add_argument("--limit-conversations", type=int, default=None, help="use only the first N conversations")
    parser.add_argument("--conversations", default=None, help="comma-separated sample ids, e.g. conv-26,conv-30")
    parser.add_argument("--config", default=None, help="config file or directory whose memory section is used")
    parser.add_argument("--embed", choices=("wordllama",), default=None, help="local embedder for semantic fusion")
    parser.add_argument("--semantic-weight", type=float, default=None, help="memory.semantic_weight (needs --embed)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    wanted = [c.strip() for c in args.conversations.split(",") if c.strip()] if args.conversations else None
    if args.data is None:
        try:
            args.data = ensure_dataset()
        except RuntimeError as exc:
            print(f"error: {exc}; download it yourself and pass --data FILE", file=sys.stderr)
            return 2
        wanted = wanted or list(DEV_CONVERSATIONS)
    elif not args.data.exists():
        print(f"error: LoCoMo data file {args.data} does not exist", file=sys.stderr)
        return 2
    config = None
    if args.config:
        from assistant_framework.config import load_config

        config = load_config(args.config)
    embed = None
    if args.embed == "wordllama":
        from assistant_framework.memory.local_embed import load_local_embedder

        try:
            embed = load_local_embedder()
        except (ImportError, RuntimeError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    if args.semantic_weight is not None or embed is not None:
        config = with_semantic_weight(config, args.semantic_weight)
    try:
        result = run(args.data, args.limit_conversations, config, conversations=wanted, embed=embed)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(result))
    else:
        print_table(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
