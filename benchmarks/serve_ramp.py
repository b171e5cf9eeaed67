"""serve_load.py --ramp: raise the number of concurrent annotators in steps until p95 passes the
target (or a 5xx or a client error appears), and print the largest number that held.

Each step lasts --step-seconds: its new annotators arrive over the first --arrival seconds, and
the step's figures (requests/s, p50/p95/p99, machine busy and steal, the server's and the load
generator's own CPU) cover the steady part after that. Annotators stay from their step to the
end. The integrity counts (over-assigned, lost, counter mismatches) are taken once at the end:
they are cumulative, so 0 at the end means 0 at every step.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from pathlib import Path

from serve_async import Plan, run_async_group
from serve_data import cpu_times, pct

TARGET_MS = 50.0


def levels_of(args) -> list[int]:
    if args.levels:
        return sorted({int(x) for x in args.levels.split(",") if x.strip()})
    step = 400 if args.quick else 200
    return list(range(step, args.max_annotators + 1, step))


def tree_cpu(root: int) -> float:
    """CPU seconds (user + system) of a process and its children (the gunicorn workers)."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parts = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid = int(stat.parent.name)
        if pid == root or int(parts[1]) == root:
            total += int(parts[11]) + int(parts[12])
    return total / ticks


def _step_figures(k: int, level: int, plan: Plan, reports: list, snap: dict) -> dict:
    lat = [d for _, part, *_ in reports for d, _kind in part]
    window = plan.step_seconds - plan.arrive
    cpu0, cpu1 = snap["machine"]
    d = [b - a for a, b in zip(cpu0, cpu1, strict=True)] if cpu0 and cpu1 else [0] * 8
    total = sum(d) or 1
    return {
        "step": k, "annotators": level, "requests": len(lat), "rps": len(lat) / window,
        "p50": 1000 * pct(lat, 50), "p95": 1000 * pct(lat, 95), "p99": 1000 * pct(lat, 99),
        "busy": 100 * (total - d[3] - d[4] - d[7]) / total, "steal": 100 * d[7] / total,
        "server_cpu": (snap["server"][1] - snap["server"][0]) / window,
        "client_cpu": snap["clients"] / plan.step_seconds,
        "server_errors": sum(r[3] for r in reports), "client_errors": sum(r[4] for r in reports),
    }  # fmt: skip


def print_step(s: dict) -> None:
    print(
        f"{s['annotators']:6d} {s['requests']:7d} {s['rps']:7.1f} {s['p50']:7.1f} "
        f"{s['p95']:7.1f} {s['p99']:7.1f} {s['busy']:5.0f}% {s['steal']:5.1f}% "
        f"{s['server_cpu']:6.2f} {s['client_cpu']:6.2f} {s['server_errors']:4d} "
        f"{s['client_errors']:4d}  {'held' if s['held'] else 'FAILED'}",
        flush=True,
    )


def _collect_step(k, plan, procs, reports_q, server_pid, last_client_cpu) -> tuple[list, dict]:
    lo = plan.step_start(k) + plan.arrive
    time.sleep(max(0.0, lo - time.time()))
    machine0, server0 = cpu_times(), tree_cpu(server_pid)
    reports = [reports_q.get(timeout=plan.step_seconds + 120) for _ in procs]
    snap = {"machine": (machine0, cpu_times()), "server": (server0, tree_cpu(server_pid))}
    clients = sum(r[2] for r in reports)
    snap["clients"] = clients - last_client_cpu
    snap["client_total"] = clients
    return reports, snap


def run_ramp(args, info: dict, server_pid: int) -> dict:
    levels = levels_of(args)
    plan = Plan(
        base=f"http://127.0.0.1:{args.port}", study_pid=info["study_pid"], t0=time.time() + 2,
        levels=levels, step_seconds=args.step_seconds, arrive=args.arrival, think=args.think,
        skip_rate=args.skip_rate, abuse_rate=args.abuse_rate, htmx=args.htmx,
    )  # fmt: skip
    ctx = multiprocessing.get_context("fork")
    stop_flag, reports_q, results = ctx.Event(), ctx.Queue(), ctx.Queue()
    indices = list(range(levels[-1]))
    procs = [
        ctx.Process(
            target=run_async_group,
            args=(indices[k :: args.client_procs], plan, stop_flag, reports_q, results),
            daemon=True,
        )
        for k in range(args.client_procs)
    ]
    for p in procs:
        p.start()
    print(f"{'annot.':>6} {'reqs':>7} {'req/s':>7} {'p50':>7} {'p95':>7} {'p99':>7} "
          f"{'busy':>6} {'steal':>6} {'srvCPU':>6} {'genCPU':>6} {'5xx':>4} {'err':>4}")  # fmt: skip
    steps, client_cpu, errors_before = [], 0.0, (0, 0)
    for k, level in enumerate(levels):
        reports, snap = _collect_step(k, plan, procs, reports_q, server_pid, client_cpu)
        client_cpu = snap["client_total"]
        s = _step_figures(k, level, plan, reports, snap)
        s["server_errors"] -= errors_before[0]
        s["client_errors"] -= errors_before[1]
        errors_before = (
            errors_before[0] + s["server_errors"],
            errors_before[1] + s["client_errors"],
        )
        s["held"] = s["p95"] < TARGET_MS and not s["server_errors"] and not s["client_errors"]
        print_step(s)
        steps.append(s)
        if not s["held"]:
            break
    stop_flag.set()
    tallies = [results.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=10)
    return {"steps": steps, "tallies": tallies, "plan": plan}


def print_ramp_summary(args, ramp: dict, ok: dict) -> bool:
    steps, tallies = ramp["steps"], ramp["tallies"]
    held = [s for s in steps if s["held"]]
    best = held[-1] if held else None
    behaviours: dict[str, int] = {}
    bad: dict[int, int] = {}
    for t in tallies:
        for key, n in t.behaviours.items():
            behaviours[key] = behaviours.get(key, 0) + n
        for status, n in t.bad_answers.items():
            bad[status] = bad.get(status, 0) + n
    server_errors = [e for t in tallies for e in t.server_errors]
    print(f"client mix (--abuse-rate {args.abuse_rate:.2f}): "
          + ", ".join(f"{k} {v}" for k, v in sorted(behaviours.items())))  # fmt: skip
    print("hostile posts answered (status: count): "
          + (", ".join(f"{s}: {c}" for s, c in sorted(bad.items())) or "none sent"))  # fmt: skip
    print(f"double submits: {sum(t.double_same for t in tallies)} answered alike, "
          f"{sum(t.double_diff for t in tallies)} differently; items walked away from: "
          f"{sum(t.abandoned for t in tallies)}")  # fmt: skip
    print(f"over-assigned items: {ok['over']}; lost submissions: {ok['lost']}; counter "
          f"mismatches: {ok['mismatched']}; server errors (5xx): {len(server_errors)}"
          + (f", e.g. {server_errors[:3]}" if server_errors else ""))  # fmt: skip
    if best is None:
        print(f"== capacity: no step held p95 < {TARGET_MS:.0f} ms ==")
    else:
        print(f"== capacity: {best['annotators']} concurrent annotators held (think "
              f"{args.think:.1f} s): {best['rps']:.1f} req/s, p50 {best['p50']:.1f} / p95 "
              f"{best['p95']:.1f} / p99 {best['p99']:.1f} ms, machine busy {best['busy']:.0f}%, "
              f"steal {best['steal']:.1f}%, load generator {best['client_cpu']:.2f} CPU ==")  # fmt: skip
    return ok["over"] == 0 and ok["lost"] == 0 and ok["mismatched"] == 0 and not server_errors
