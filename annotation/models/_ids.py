"""Id and key generators the models use as field defaults (kept importable for old migrations)."""

from __future__ import annotations

import secrets


def _public_id() -> str:
    """Opaque, unguessable ids for anything an annotator's URL may carry; also the raters'
    pseudonyms in reports and exports. Never starting with "-" or "_": a leading "-" is what a
    spreadsheet runs as a formula, so the CSV for Excel would have to escape the pseudonym
    ("'-x...") and it would no longer match the report's (about 1 in 32 raters before)."""
    while True:
        token = secrets.token_urlsafe(12)
        if token[0] not in "-_":
            return token


SHUFFLE_MAX = 2**31 - 1


def _shuffle_key() -> int:
    # A random position per item: the engine scans items of one load level in this order from a
    # random pivot, which gives a random pick through an index instead of ORDER BY random().
    return secrets.randbelow(SHUFFLE_MAX)
