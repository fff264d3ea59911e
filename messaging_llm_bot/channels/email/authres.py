"""Is a mail really from its ``From`` address? The receiving server's ``Authentication-Results`` (RFC 8601).

``From`` is easy to forge, so a mail counts as an allowed sender's only when the result the receiving server
added says ``dkim=pass`` with a signing domain (``header.d``) aligned to the From domain, or ``spf=pass`` with an
envelope sender (``smtp.mailfrom``) aligned to it. A sender can add its own Authentication-Results lower in
the header block, so only one header is read: the topmost, or, when ``email.authserv_id`` names the provider's,
the topmost of those whose authserv-id is that (RFC 8601 section 5: the others are not to be trusted).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

#: One header is read at most this long (a forged one could be long).
MAX_HEADER_CHARS = 8_000
_COMMENT = re.compile(r"\([^()]*\)")
_QUOTED = re.compile(r'"([^"\\]*)"')


@dataclass(frozen=True)
class Verdict:
    """Whether the From address is proven, and the reason in words (for the log)."""

    passed: bool
    reason: str


def verdict(headers: Sequence[str], from_address: str, authserv_id: str = "") -> Verdict:
    """The verdict for ``from_address`` from a mail's Authentication-Results ``headers``, topmost first."""
    domain = from_address.rpartition("@")[2].strip().lower()
    if not domain:
        return Verdict(False, "the From header has no address")
    chosen = None
    for header in headers:
        serv, results = _parse(header)
        if not authserv_id or serv == authserv_id.strip().lower():
            chosen = (serv, results)
            break
    if chosen is None:
        where = f" from {authserv_id}" if authserv_id else ""
        return Verdict(False, f"no Authentication-Results header{where}")
    serv, results = chosen
    for method, result, props in results:
        if result != "pass":
            continue
        signer = props.get("header.d") or _domain(props.get("header.i", ""))
        if method == "dkim" and _aligned(signer, domain):
            return Verdict(True, f"{serv}: dkim=pass for {domain}")
        if method == "spf" and _aligned(_domain(props.get("smtp.mailfrom", "")), domain):
            return Verdict(True, f"{serv}: spf=pass for {domain}")
    return Verdict(False, f"{serv or 'the receiving server'} reports no dkim or spf pass for {domain}")


def _parse(header: str) -> tuple[str, list[tuple[str, str, dict[str, str]]]]:
    """(authserv-id, [(method, result, {ptype.property: value})]) of one header's value."""
    text = " ".join(str(header)[:MAX_HEADER_CHARS].split())
    for _ in range(5):  # nested comments, innermost first
        text = _COMMENT.sub(" ", text)
    text = _QUOTED.sub(lambda m: m.group(1).replace(";", " ").replace(" ", ""), text)
    first, *rest = text.split(";")
    serv = (first.split() or [""])[0].lower()
    results: list[tuple[str, str, dict[str, str]]] = []
    for resinfo in rest:
        tokens = resinfo.replace(" =", "=").replace("= ", "=").split()
        if not tokens or "=" not in tokens[0]:
            continue  # "none", or a reason without a method
        method, _, result = tokens[0].partition("=")
        method = method.split("/")[0].lower()  # "dkim/1"
        props: dict[str, str] = {}
        for token in tokens[1:]:
            key, eq, value = token.partition("=")
            if eq and "." in key:
                props.setdefault(key.lower(), value.strip().lower())
        results.append((method, result.lower(), props))
    return serv, results


def _domain(value: str) -> str:
    """The domain of ``user@domain``, ``@domain`` or ``domain``."""
    return value.rpartition("@")[2].strip().strip("<>").lower()


def _aligned(domain: str, from_domain: str) -> bool:
    """Relaxed alignment (DMARC's): the same domain, or one a subdomain of the other's organisation. Kept to
    exact-or-parent: ``mail.example.org`` proves ``example.org`` only when From is at or under it."""
    if not domain:
        return False
    return from_domain == domain or from_domain.endswith("." + domain)
