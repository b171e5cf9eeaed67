"""Reads shared by the judge pages, the API and the command."""

from __future__ import annotations

from collections import Counter
from typing import Any

from evaluation.models import JudgeCall, JudgeRun


def _choice_or_scores(parsed: dict | None) -> Any:
    if not parsed:
        return None
    if "choice" in parsed:
        return parsed["choice"]
    return tuple(sorted((parsed.get("scores") or {}).items()))


def position_consistency(run: JudgeRun) -> dict[str, Any] | None:
    """Both-orders mode: share of items whose canonical choice is the same in both orders, and
    how often the judge picked the answer shown first (a position-bias figure)."""
    if not run.both_orders:
        return None
    rows = run.calls.filter(
        purpose__in=[JudgeCall.Purpose.PRIMARY, JudgeCall.Purpose.SWAP],
        parse_status=JudgeCall.Parse.OK,
    ).values_list("item_id", "purpose", "parsed")
    by_item: dict[int, dict[str, dict[str, Any]]] = {}
    shown: Counter[str] = Counter()
    for item_id, purpose, parsed in rows:
        assert parsed is not None  # parse_status OK
        by_item.setdefault(item_id, {})[purpose] = parsed
        shown[parsed.get("shown")] += 1
    pairs = [v for v in by_item.values() if len(v) == 2]
    consistent = sum(
        1
        for v in pairs
        if v[JudgeCall.Purpose.PRIMARY]["choice"] == v[JudgeCall.Purpose.SWAP]["choice"]
    )
    decided = shown["left"] + shown["right"]
    return {
        "pairs": len(pairs),
        "consistent": consistent,
        "rate": consistent / len(pairs) if pairs else None,
        "first_shown_preferred": shown["left"] / decided if decided else None,
    }


def self_consistency(run: JudgeRun) -> dict[str, Any] | None:
    """Repeats: share of repeated items where the fresh call agrees with the primary."""
    rows = run.calls.filter(
        purpose__in=[JudgeCall.Purpose.PRIMARY, JudgeCall.Purpose.REPEAT],
        parse_status=JudgeCall.Parse.OK,
    ).values_list("item_id", "purpose", "parsed")
    by_item: dict[int, dict[str, Any]] = {}
    for item_id, purpose, parsed in rows:
        by_item.setdefault(item_id, {})[purpose] = _choice_or_scores(parsed)
    pairs = [v for v in by_item.values() if JudgeCall.Purpose.REPEAT in v and len(v) == 2]
    if not pairs:
        return None
    same = sum(1 for v in pairs if v[JudgeCall.Purpose.PRIMARY] == v[JudgeCall.Purpose.REPEAT])
    return {"pairs": len(pairs), "agree": same, "rate": same / len(pairs)}


def run_summary(run: JudgeRun) -> dict[str, Any]:
    return {
        "id": run.pk,
        "status": run.status,
        "study": run.study_id,
        "judge": run.judge.name,
        "template": run.template.key,
        "planned": run.n_planned,
        "done": run.n_done,
        "ok": run.n_ok,
        "parse_failed": run.n_parse_failed,
        "call_failed": run.n_call_failed,
        "cached": run.n_cached,
        "tokens_in": run.tokens_in,
        "tokens_out": run.tokens_out,
        "cost": run.cost,
        "price_in_per_1k": run.price_in_per_1k,
        "price_out_per_1k": run.price_out_per_1k,
        "budget": run.budget,
        "cost_estimate": run.cost_estimate,
        "both_orders": run.both_orders,
        "repeat_rate": run.repeat_rate,
        "mode": run.mode,
        "position_consistency": position_consistency(run),
        "self_consistency": self_consistency(run),
        "error": run.error,
        "started_at": run.started_at,
        "finished_at": run.finished_at,
    }


def run_failures(run: JudgeRun):
    """Calls that failed or whose output did not parse, with their reasons and raw output."""
    from django.db.models import Q

    return run.calls.filter(
        Q(status=JudgeCall.Status.FAILED) | Q(parse_status=JudgeCall.Parse.FAILED)
    ).order_by("id")


def runs_for(user):
    qs = JudgeRun.objects.select_related("study", "judge", "template")
    return qs if user.is_superuser else qs.filter(study__owner=user)


def unparsed_judge_outputs(study) -> list[dict[str, Any]]:
    """Live judge outputs of ``study`` that could not be parsed and stand for no rating, as the
    report's data-quality table and the generic export count them (an imported unparsed output
    is a Rating with parse_status "unparsed" instead). One per (judge, item, first or repeat):
    the earliest call; none where the judge has a rating of that exposure (a later run or a
    re-parse read it). Swap calls are never ratings, so their failures are not listed either."""
    from annotation.models import Rating

    rated = set(
        Rating.objects.filter(item__study=study, rater__kind="judge").values_list(
            "rater_id", "item_id", "assignment__is_repeat"
        )
    )
    rows = (
        JudgeCall.objects.filter(
            run__study=study,
            status=JudgeCall.Status.OK,
            parse_status=JudgeCall.Parse.FAILED,
            purpose__in=[JudgeCall.Purpose.PRIMARY, JudgeCall.Purpose.REPEAT],
        )
        .order_by("id")
        .values(
            "id",
            "item_id",
            "purpose",
            "left_is_a",
            "hint_shown",
            "raw_output",
            "started_at",
            "finished_at",
            "latency_ms",
            "run__judge__rater_id",
        )
    )
    out = []
    for r in rows:
        key = (r["run__judge__rater_id"], r["item_id"], r["purpose"] == JudgeCall.Purpose.REPEAT)
        if key not in rated:
            rated.add(key)
            out.append(r | {"rater_id": key[0], "is_repeat": key[2]})
    return out
