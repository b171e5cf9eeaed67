"""The report's memory policy: keep freed memory for the next array instead of handing it back.

A report of a million ratings allocates and frees many arrays of a few to a few hundred MB
(one column of 1M floats is 8 MB). With glibc's defaults every array above the malloc mmap
threshold gets fresh pages from the kernel and returns them when freed, so the next array of
that size faults in and zeroes new pages again; the worker threads' own malloc arenas keep apart
what one thread frees from what another allocates. On the 2-core machines of
benchmarks/stats_speed.py that was about 145,000 page faults and 1.8-2.1 CPU s of system time in
the first 1M report; with the settings below, 50,000-70,000 faults and 1.3-1.7 s
(docs/decisions/report-speed.md, eleventh round).

``keep_freed_memory`` sets, once per process and before the first report allocates:
- ``M_MMAP_THRESHOLD`` 32 MB (glibc's largest): smaller blocks come from the heap and are reused;
- ``M_TRIM_THRESHOLD`` 1 GiB: the heap's free top is kept up to that size, not returned at once;
- ``M_ARENA_MAX`` 2: threads started later (the report's workers) share two arenas, so what one
  frees the other can reuse.

The price is resident memory: a process that computed a large report keeps up to about 1 GiB of
freed heap for the next one (docs/deploy.md). ``REPORT_MALLOC_TUNING=0`` in the environment turns
it off. On a C library other than glibc (or without ``mallopt``) nothing happens.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading
from collections.abc import Callable

# glibc's mallopt parameters (malloc.h).
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
M_ARENA_MAX = -8

SETTINGS = (
    (M_MMAP_THRESHOLD, 32 * 1024 * 1024),
    (M_TRIM_THRESHOLD, 1024 * 1024 * 1024),
    (M_ARENA_MAX, 2),
)

_lock = threading.Lock()
_done: bool | None = None  # None: not tried yet; else whether glibc took the settings


def _mallopt() -> Callable[[int, int], int] | None:
    """glibc's ``mallopt``, or None on another C library."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        if not hasattr(libc, "gnu_get_libc_version"):
            return None
        fn = libc.mallopt
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_int]
    fn.restype = ctypes.c_int
    return fn


def keep_freed_memory() -> bool:
    """Apply ``SETTINGS`` once per process (later calls only return the outcome). True when
    glibc accepted every setting; False when turned off, unavailable or refused."""
    global _done
    with _lock:
        if _done is None:
            _done = _apply()
        return _done


def _apply() -> bool:
    if os.environ.get("REPORT_MALLOC_TUNING", "1").strip().lower() in ("0", "false", "off", "no"):
        return False
    fn = _mallopt()
    if fn is None:
        return False
    return all(fn(param, value) == 1 for param, value in SETTINGS)
