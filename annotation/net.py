"""The client's network address, one rule for every caller (rate limits, per-address caps).

Per-address rules count under ``limit_key``: the IPv4 address, or the /64 network an IPv6
address lies in. One host usually holds a whole /64 and may send from any address in it
(privacy extensions pick a new one every day; a script can pick one per request), so counting
per IPv6 address would give a single visitor 2^64 budgets.

Behind a reverse proxy REMOTE_ADDR is the proxy's address, so every visitor would share one
per-address budget. X-Forwarded-For carries the real address, but any client can send that header,
so it is read only when the request reached us from an operator-listed proxy (settings
TRUSTED_PROXIES, addresses or networks). The header is then walked from the right, skipping trusted
hops, and the first address that is not a trusted proxy is the client: addresses further left were
written by the client itself and prove nothing.
"""

from __future__ import annotations

import ipaddress
from functools import lru_cache

from django.conf import settings
from django.http import HttpRequest

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@lru_cache(maxsize=8)
def _networks(entries: tuple[str, ...]) -> tuple[Network, ...]:
    return tuple(ipaddress.ip_network(entry, strict=False) for entry in entries)


def _parse(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        address = ipaddress.ip_address(text.strip())
    except ValueError:
        return None
    # An IPv4 client seen through an IPv6 socket: key it as the IPv4 address it is.
    mapped = getattr(address, "ipv4_mapped", None)
    return mapped or address


def _trusted(address: ipaddress.IPv4Address | ipaddress.IPv6Address, nets: tuple) -> bool:
    return any(address.version == net.version and address in net for net in nets)


def client_ip(request: HttpRequest) -> str:
    """The address the request came from: REMOTE_ADDR, or the client a trusted proxy names.

    Without TRUSTED_PROXIES (the default) this is always REMOTE_ADDR and X-Forwarded-For is
    ignored, so a forged header cannot buy a fresh per-address budget.
    """
    remote = request.META.get("REMOTE_ADDR", "") or ""
    nets = _networks(tuple(getattr(settings, "TRUSTED_PROXIES", ()) or ()))
    peer = _parse(remote)
    if not nets or peer is None or not _trusted(peer, nets):
        return remote
    hops = [hop for hop in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if hop.strip()]
    client = peer
    for hop in reversed(hops):
        address = _parse(hop)
        if address is None:
            # Garbage where a proxy should have written an address: stop at the last sure hop.
            break
        client = address
        if not _trusted(address, nets):
            break
    return str(client)


IPV6_LIMIT_PREFIX = 64


def limit_key(request: HttpRequest) -> str:
    """What per-address limits count under: client_ip, widened to its /64 for IPv6."""
    address = client_ip(request)
    parsed = _parse(address)
    if parsed is None or parsed.version == 4:
        return str(parsed or address)
    return str(ipaddress.ip_network(f"{parsed}/{IPV6_LIMIT_PREFIX}", strict=False))
