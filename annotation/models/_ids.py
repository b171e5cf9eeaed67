"""Id and key generators the models use as field defaults (kept importable for old migrations)."""

from __future__ import annotations

import secrets


def _public_id() -> str:
    # Opaque, unguessable ids for anything an annotator's URL may carry.
    return secrets.token_urlsafe(12)


SHUFFLE_MAX = 2**31 - 1


def _shuffle_key() -> int:
    # A random position per item: the engine scans items of one load level in this order from a
    # random pivot, which gives a random pick through an index instead of ORDER BY random().
    return secrets.randbelow(SHUFFLE_MAX)
