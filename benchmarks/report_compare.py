"""The whole report, every table and every cell, compared before and after a speed change.

    .venv/bin/python benchmarks/report_compare.py --save /tmp/before   # on the old code
    .venv/bin/python benchmarks/report_compare.py --check /tmp/before  # on the new code

Cases: three small synthetic studies (different seeds, sizes, options: repeats left out, raters
below the thresholds excluded, filters), the released LLMEval-2 scores (skipped when
../shared/data is absent) and the speed benchmark's 300k study. Each report goes through ``report_to_jsonable`` (the JSON the API
serves) without the timings, and is written as one JSON file per case; ``--check`` compares
each file cell for cell with the saved one and prints the first differences. Exit status 1 when
any case differs.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ranking.stats import report_to_jsonable, synthetic  # noqa: E402
from ranking.stats.report import build_report  # noqa: E402


def _synthetic(data_seed: int, n_questions: int, n_models: int = 8, **options: Any):
    def case() -> dict:
        s = synthetic.generate(n_models=n_models, n_questions=n_questions, seed=data_seed)
        return build_report(s.star_df, s.pair_df, **options)

    return case


def _llmeval2() -> dict | None:
    from tests.stats import realdata  # the loader the real-data tests use

    if not realdata.LLMEVAL2.exists():
        return None
    star = realdata.llmeval2_star_df()
    return build_report(star, None, criterion_max=realdata.LLMEVAL2_MAX, n_bootstrap=200)


CASES = {
    "synthetic_default": _synthetic(0, 30),
    "synthetic_options": _synthetic(
        1,
        40,
        include_repeats=False,
        min_accuracy=0.55,
        min_consistency=0.6,
        bt_ties="exclude",
        both_bad="exclude",
        n_bootstrap=300,
        n_shuffles=20,
        seed=7,
    ),
    "synthetic_filtered": _synthetic(
        2, 25, pools=["onsite", "crowd", "judge"], start="2024-01-01T06:00:00", n_bootstrap=200
    ),
    "llmeval2": _llmeval2,
    # The speed benchmark's 300k study (benchmarks/stats_speed.py), every default option.
    "synthetic_300k": _synthetic(0, 500, n_models=20),
}


def canonical(report: dict) -> dict:
    """The report as the API's JSON, without the seconds it took."""
    out = report_to_jsonable(report)
    out["meta"].pop("seconds", None)
    out["meta"].pop("timings", None)
    out["meta"].pop("cpu_timings", None)
    return json.loads(json.dumps(out, sort_keys=True, default=str))


def differences(old: Any, new: Any, where: str = "") -> list[str]:
    """Every place where ``new`` differs from ``old`` (exact: floats must be equal)."""
    if isinstance(old, dict) and isinstance(new, dict):
        out = [f"{where}.{k}: only before" for k in old.keys() - new.keys()]
        out += [f"{where}.{k}: only after" for k in new.keys() - old.keys()]
        for k in sorted(old.keys() & new.keys()):
            out += differences(old[k], new[k], f"{where}.{k}")
        return out
    if isinstance(old, list) and isinstance(new, list):
        if len(old) != len(new):
            return [f"{where}: {len(old)} rows before, {len(new)} after"]
        return [
            d
            for i, (a, b) in enumerate(zip(old, new, strict=True))
            for d in differences(a, b, f"{where}[{i}]")
        ]
    return [] if old == new else [f"{where}: {old!r} before, {new!r} after"]


def _column(difference: str) -> str:
    """``.table[3].col: ...`` -> ``table.col``: where a difference is, without the row."""
    where = difference.split(":", 1)[0]
    return re.sub(r"\[\d+\]", "", where).lstrip(".")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--save", type=Path, help="write the reports to this folder")
    group.add_argument("--check", type=Path, help="compare with the reports in this folder")
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated case names")
    args = parser.parse_args()
    failed = 0
    for name in args.cases.split(","):
        t = time.perf_counter()
        report = CASES[name]()
        if report is None:
            print(f"{name}: skipped (data absent)")
            continue
        data = canonical(report)
        seconds = time.perf_counter() - t
        if args.save:
            args.save.mkdir(parents=True, exist_ok=True)
            (args.save / f"{name}.json").write_text(json.dumps(data, sort_keys=True))
            print(f"{name}: saved ({seconds:.1f} s)")
            continue
        diff = differences(json.loads((args.check / f"{name}.json").read_text()), data)
        failed += bool(diff)
        print(f"{name}: {'DIFFERENT' if diff else 'identical'} ({seconds:.1f} s)")
        for line in diff[:5]:
            print("   ", line)
        for where, count in sorted(Counter(_column(d) for d in diff).items()):
            print(f"    {where}: {count} cells differ")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
