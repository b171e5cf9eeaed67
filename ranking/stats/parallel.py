"""Compiled kernels split over the cores: one shared pool of worker threads for leaf jobs.

The report's kernels (Elo shuffles, the per-pair kappa bootstrap) are numba loops that release
the GIL. Each is cut into blocks with their own seeds (one per Elo chain; one per block of a
fixed number of rater pairs, spawned with ``numpy.random.SeedSequence``), so the figures are the
same whatever the number of threads, or in one thread. The jobs given to ``kernel_map`` never
wait for other jobs of the pool, so the shared pool cannot deadlock when several reports run at
once. ``sequential()`` (used by ``build_report`` when ``REPORT_THREADS`` is 0) runs the blocks
in the calling thread, in order.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import numpy as np

# Threads of the shared pool (the machine's two cores; more only queue).
KERNEL_THREADS = 2

_SEQUENTIAL: ContextVar[bool] = ContextVar("report_kernels_sequential", default=False)
_LOCK = threading.Lock()
_POOL: ThreadPoolExecutor | None = None


@contextmanager
def sequential(on: bool = True) -> Iterator[None]:
    """Within the block, ``kernel_map`` runs its jobs in the calling thread."""
    token = _SEQUENTIAL.set(on)
    try:
        yield
    finally:
        _SEQUENTIAL.reset(token)


def _pool() -> ThreadPoolExecutor:
    global _POOL
    with _LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max_workers=KERNEL_THREADS, thread_name_prefix="kernel")
        return _POOL


def kernel_map[T](fn: Callable[..., T], jobs: Iterable[tuple[Any, ...]]) -> list[T]:
    """``[fn(*job) for job in jobs]``, the jobs spread over the shared pool's threads."""
    todo = list(jobs)
    if len(todo) < 2 or KERNEL_THREADS < 2 or _SEQUENTIAL.get():
        return [fn(*job) for job in todo]
    return list(_pool().map(lambda job: fn(*job), todo))


def block_seeds(seed: int, n_blocks: int) -> list[int]:
    """One 31-bit seed per block, spawned from ``seed`` (numpy ``SeedSequence.spawn``)."""
    children = np.random.SeedSequence(seed).spawn(n_blocks)
    return [int(c.generate_state(1, np.uint32)[0] & 0x7FFFFFFF) for c in children]


def split(n: int, parts: int) -> list[slice]:
    """``parts`` contiguous slices covering range(n) (fewer when n is small)."""
    edges = np.linspace(0, n, min(parts, max(n, 1)) + 1).astype(int)
    return [slice(int(lo), int(hi)) for lo, hi in zip(edges[:-1], edges[1:], strict=True)]


def timed[T](fn: Callable[..., T], *args: Any, **kwargs: Any) -> tuple[T, tuple[float, float]]:
    """(fn(*args, **kwargs), (wall, CPU) seconds it took): a report section on a worker thread."""
    t, cpu = time.perf_counter(), time.thread_time()
    out = fn(*args, **kwargs)
    return out, (round(time.perf_counter() - t, 3), round(time.thread_time() - cpu, 3))
