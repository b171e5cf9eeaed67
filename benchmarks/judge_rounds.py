"""Where a judge run's rounds lose time over the server's latency, from a run's trace.

    JUDGE_TRACE=/tmp/trace.json .venv/bin/python benchmarks/judge_throughput.py \\
        --calls 2000 --concurrency 64 --latency 0.2 --no-crash
    .venv/bin/python benchmarks/judge_rounds.py /tmp/trace.json --latency 0.2

The executor (JUDGE_TRACE=file) saves each answered request's worker, when it was sent and when
its answer came back, and each write's start, end, size and database-thread CPU. This prints,
in milliseconds:
- the time inside a call over the latency (request sent -> answer back, minus the latency: the
  HTTP exchange, the server, and the wait for the event loop and the GIL);
- the time between an answer and the same worker's next request (the worker, the queues and
  the rate limiter);
- each worker's loss per round (its first request to its last answer, minus its calls times the
  latency, over its calls): the run ends with the slowest worker;
- the writes: how long and how much CPU, per write and per call (a least-squares line), and the
  time inside a call for answers that arrived while a write ran against the others.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict


def quantiles(values: list[float]) -> str:
    if not values:
        return "none"
    v = sorted(values)
    n = len(v)
    mean = sum(v) / n
    return (
        f"mean {1e3 * mean:.2f}, median {1e3 * v[n // 2]:.2f}, "
        f"p90 {1e3 * v[int(n * 0.9)]:.2f}, max {1e3 * v[-1]:.2f} ms (n {n})"
    )


def fixed_and_per_call(points: list[tuple[int, float]]) -> tuple[float, float]:
    """Least squares y = a + b * calls over the writes: (a, b)."""
    n = len(points)
    if n < 2:
        return (points[0][1], 0.0) if points else (0.0, 0.0)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    b = sum((x - mx) * (y - my) for x, y in points) / sxx if sxx else 0.0
    return my - b * mx, b


def report(trace: list[list], latency: float) -> None:
    calls = [(w, sent, back) for kind, w, sent, back in (t for t in trace if t[0] == "call")]
    writes = [
        (n, start, end, cpu) for kind, n, start, end, cpu in (t for t in trace if t[0] == "write")
    ]
    chains: dict[int, list[tuple[float, float]]] = defaultdict(list)
    for w, sent, back in calls:
        chains[w].append((sent, back))
    excess: list[float] = []
    gaps: list[float] = []
    losses: list[float] = []
    for chain in chains.values():
        chain.sort()
        excess += [back - sent - latency for sent, back in chain]
        gaps += [nxt[0] - back for (_, back), nxt in zip(chain, chain[1:], strict=False)]
        span = chain[-1][1] - chain[0][0]
        losses.append((span - latency * len(chain)) / len(chain))
    first = min(sent for _, sent, _ in calls)
    last = max(back for _, _, back in calls)
    print(
        f"{len(calls)} calls by {len(chains)} workers; first request to last answer {last - first:.3f} s"
    )
    print(f"inside a call, over the latency: {quantiles(excess)}")
    print(f"answer -> the worker's next request: {quantiles(gaps)}")
    print(f"loss per round, per worker: {quantiles(losses)}")
    if not writes:
        return
    wall_a, wall_b = fixed_and_per_call([(n, end - start) for n, start, end, _ in writes])
    cpu_a, cpu_b = fixed_and_per_call([(n, cpu) for n, _, _, cpu in writes])
    busy = sum(end - start for _, start, end, _ in writes)
    print(
        f"{len(writes)} writes, {busy:.3f} s in all: {quantiles([e - s for _, s, e, _ in writes])}; "
        f"wall {1e3 * wall_a:.2f} ms + {1e3 * wall_b:.3f} ms per call, "
        f"thread CPU {1e3 * cpu_a:.2f} ms + {1e3 * cpu_b:.3f} ms per call"
    )
    during: list[float] = []
    other: list[float] = []
    for _, sent, back in calls:
        inside = any(start <= back <= end for _, start, end, _ in writes)
        (during if inside else other).append(back - sent - latency)
    print(f"inside a call, answer back during a write: {quantiles(during)}")
    print(f"inside a call, otherwise: {quantiles(other)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("trace")
    ap.add_argument("--latency", type=float, default=0.2, help="the fake server's, in seconds")
    args = ap.parse_args()
    with open(args.trace) as f:
        report(json.load(f), args.latency)


if __name__ == "__main__":
    main()
