"""Simulated annotator pools for demos: clearly labelled, seeded, derived from real scores.

The demo's imported data has one human score and one GPT-4 score per answer, so a report on it
would show empty pool, consistency and agreement tables. ``simulate_ratings`` adds human raters in
the onsite, crowd and public pools (``Rater.meta["simulated"] = True``, names ``sim-onsite-01``...)
whose ratings are the study's real human scores plus pool-specific noise:

- star studies: per item and criterion the "truth" is the mean real human score (else the mean
  judge score, else the middle of the criterion's range); a rater adds its own bias and noise
  (onsite least, public most; a few public raters are careless) and rounds into the range. When
  the hint is hidden the score drifts up a little (seed 004, finding 8).
- pairwise studies: an answer's quality is its mean real human star score, normalised to 0-1,
  from any star study of the same dataset (else the judge's, else 0.5); a rater prefers the better
  answer with its pool's noise, a mildly longer answer, and (a little) the left side; near-equal
  answers are ties, or "both bad" when both are weak.
- about 2 % hidden repeats per rater (``Assignment.is_repeat`` / ``repeat_of``), spaced out, the
  pairwise ones with the sides swapped; a repeat keeps the first answer with the rater's stability
  (onsite highest), else it is drawn afresh. Random left/right, plausible durations, times spread
  over a few days.

Simulated ratings do not touch the items' counters (``Item.n_ratings``): they are an overlay for
the report and never take a real annotator's place in a live study.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np
from django.db import transaction
from django.db.models import Avg, Max

from annotation.models import (
    Assignment,
    Criterion,
    Item,
    Question,
    Rater,
    Rating,
    Rubric,
    Score,
    Study,
)

POOLS = ("onsite", "crowd", "public")
# Per pool: noise (fraction of a criterion's range / of the 0-1 quality scale), bias spread,
# left-side bias spread, stability on repeats, median seconds per item, share of careless raters.
PROFILES: dict[str, dict[str, float]] = {
    "onsite": {
        "noise": 0.22,
        "bias": 0.03,
        "left": 0.01,
        "stability": 0.92,
        "median_s": 55,
        "careless": 0.0,
    },
    "crowd": {
        "noise": 0.32,
        "bias": 0.06,
        "left": 0.03,
        "stability": 0.78,
        "median_s": 32,
        "careless": 0.05,
    },
    "public": {
        "noise": 0.45,
        "bias": 0.10,
        "left": 0.06,
        "stability": 0.62,
        "median_s": 22,
        "careless": 0.15,
    },
}
HINT_HIDDEN_DRIFT = 0.08  # of a criterion's range, upwards, when the hint is not shown
LENGTH_PREFERENCE = 0.05  # quality units per 300 characters of extra length (capped at 1 unit)
TIE_BAND = 0.07
BOTH_BAD_BELOW = 0.35


@dataclass
class SimulationResult:
    study_id: int
    raters: int = 0
    assignments: int = 0
    repeats: int = 0
    ratings: int = 0
    scores: int = 0
    skipped: bool = False
    message: str = ""
    per_pool: dict[str, int] = field(default_factory=dict)


def _simulated_assignments(study: Study):
    return Assignment.objects.filter(study=study, rater__meta__simulated=True)


def _simulated_rater_ids():
    # A subquery: exclude() across a JSON key would also drop raters without the key on SQLite.
    return Rater.objects.filter(meta__simulated=True).values("id")


def _rater_profile(pool: str, index: int, seed: int) -> dict[str, float]:
    """A rater's own noise, bias, side bias and stability, fixed by its name (pool + number)."""
    p = PROFILES[pool]
    rng = np.random.default_rng([seed, POOLS.index(pool), index])
    careless = bool(rng.random() < p["careless"])
    return {
        "simulated": True,
        "noise": round(float(p["noise"] * rng.uniform(0.7, 1.3) * (2.5 if careless else 1.0)), 4),
        "bias": round(float(rng.normal(0, p["bias"])), 4),
        "left_bias": round(float(rng.normal(0, p["left"])), 4),
        "stability": round(float(np.clip(rng.normal(p["stability"], 0.05), 0.3, 0.99)), 4),
        "median_s": round(float(p["median_s"] * rng.uniform(0.7, 1.4)), 1),
        "careless": careless,
    }


def _raters(
    pools, raters_per_pool: int, start_index: int, seed: int, *, refresh: bool
) -> list[Rater]:
    """The simulated raters, created on first use; ``refresh`` redraws an existing rater's
    profile from the seed (a forced re-simulation starts from scratch)."""
    out = []
    for pool in pools:
        for i in range(start_index + 1, start_index + raters_per_pool + 1):
            name = f"sim-{pool}-{i:02d}"
            rater = Rater.objects.filter(name=name, user__isnull=True, external_id="").first()
            if rater is not None and refresh:
                rater.meta = {**(rater.meta or {}), **_rater_profile(pool, i, seed)}
                rater.save(update_fields=["meta"])
            if rater is None:
                rater = Rater.objects.create(
                    kind=Rater.Kind.HUMAN,
                    pool=pool,
                    name=name,
                    nickname=name,
                    meta=_rater_profile(pool, i, seed),
                )
            out.append(rater)
    return out


def _next_index(study: Study) -> int:
    """Highest simulated rater number already used in this study (for ``more``)."""
    names = (
        Rater.objects.filter(assignments__study=study, meta__simulated=True)
        .values_list("name", flat=True)
        .distinct()
    )
    numbers = [int(n.rsplit("-", 1)[1]) for n in names if n.rsplit("-", 1)[-1].isdigit()]
    return max(numbers, default=0)


def _real_scores(filter_kwargs: dict, kind: str) -> dict[tuple[int, str], float]:
    """Mean first-rating score per (key, criterion) of non-simulated raters of one kind."""
    rows = (
        Score.objects.filter(
            rating__assignment__status=Assignment.Status.SUBMITTED,
            rating__assignment__is_repeat=False,
            rating__rater__kind=kind,
            **filter_kwargs,
        )
        .exclude(rating__rater_id__in=_simulated_rater_ids())
        .values_list("rating__item__response_a_id", "criterion__key", "criterion_id")
        .annotate(mean=Avg("value"))
    )
    return {(resp, key): float(mean) for resp, key, _cid, mean in rows}


def _response_quality(study: Study) -> dict[int, float]:
    """Normalised (0-1) mean star score per response, from star studies of the same dataset:
    human scores where there are any, the judges' otherwise."""
    crit = {c.pk: c for c in Criterion.objects.all()}
    quality: dict[int, float] = {}
    for kind in (Rater.Kind.HUMAN, Rater.Kind.JUDGE):
        rows = (
            Score.objects.filter(
                rating__assignment__status=Assignment.Status.SUBMITTED,
                rating__assignment__is_repeat=False,
                rating__rater__kind=kind,
                rating__item__study__dataset_id=study.dataset_id,
                rating__item__response_b__isnull=True,
            )
            .exclude(rating__rater_id__in=_simulated_rater_ids())
            .values_list("rating__item__response_a_id", "criterion_id")
            .annotate(mean=Avg("value"))
        )
        acc: dict[int, list[float]] = defaultdict(list)
        for resp, cid, mean in rows:
            c = crit[cid]
            span = max(c.max_score - c.min_score, 1)
            acc[resp].append((float(mean) - c.min_score) / span)
        for resp, vals in acc.items():
            quality.setdefault(resp, float(np.mean(vals)))
    return quality


@transaction.atomic
def simulate_ratings(
    *,
    study: Study,
    raters_per_pool: int = 8,
    seed: int = 0,
    pools: tuple[str, ...] = POOLS,
    ratings_per_item: int = 1,
    repeat_rate: float = 0.02,
    max_items: int | None = None,
    force: bool = False,
    more: bool = False,
) -> SimulationResult:
    """Add simulated raters' ratings to ``study`` (see the module docstring).

    Idempotent: when the study already has simulated ratings nothing is added, unless ``force``
    (delete them and simulate again) or ``more`` (another round with new raters). Each item gets
    ``ratings_per_item`` ratings from each pool (capped at the pool's size). Seeded: the same
    seed on the same data gives the same ratings.
    """
    unknown = [p for p in pools if p not in PROFILES]
    if unknown:
        raise ValueError(f"Unknown pools: {', '.join(unknown)} (use {', '.join(POOLS)}).")
    if raters_per_pool < 1:
        raise ValueError("raters_per_pool must be at least 1.")
    result = SimulationResult(study_id=study.pk)
    existing = _simulated_assignments(study)
    start_index = 0
    if existing.exists():
        if force:
            existing.delete()
        elif more:
            start_index = _next_index(study)
        else:
            result.skipped = True
            result.message = (
                f"Study {study.name!r} already has simulated ratings; nothing added "
                "(use force to replace them or more to add another round)."
            )
            return result

    rng = np.random.default_rng([seed, study.pk, start_index])
    raters = _raters(pools, raters_per_pool, start_index, seed, refresh=force)
    result.raters = len(raters)

    items = list(
        Item.objects.filter(study=study)
        .order_by("id")
        .values_list(
            "id",
            "question_id",
            "response_a_id",
            "response_b_id",
            "response_a__length",
            "response_b__length",
        )
    )
    if max_items is not None and len(items) > max_items:
        keep = np.sort(rng.choice(len(items), size=max_items, replace=False))
        items = [items[i] for i in keep]
    if not items:
        result.message = "The study has no items."
        return result
    pairwise = study.mode == Rubric.Mode.PAIRWISE

    questions = {
        q["id"]: q
        for q in Question.objects.filter(id__in={it[1] for it in items}).values(
            "id", "kind", "answer_type", "reference"
        )
    }
    criteria = list(Criterion.objects.filter(rubric_id=study.rubric_id))
    by_key = {c.key: c for c in criteria}

    if pairwise:
        quality = _response_quality(study)
        truth = None
    else:
        item_filter = {"rating__item__study": study}
        human = _real_scores(item_filter, Rater.Kind.HUMAN)
        judge = _real_scores(item_filter, Rater.Kind.JUDGE)
        truth = defaultdict(dict)
        for source in (judge, human):  # human overrides judge
            for (resp, key), mean in source.items():
                if key in by_key:
                    truth[resp][key] = mean

    # Times: sessions starting in the four days before the newest real rating (or the study's
    # creation), so that simulated ratings never lie in the future.
    latest = Assignment.objects.filter(study=study).aggregate(t=Max("submitted_at"))["t"]
    base = (latest or study.created_at).replace(microsecond=0) - dt.timedelta(days=4)
    hint_policy = study.hint_policy

    # --- who rates what
    plan: dict[int, list[int]] = defaultdict(list)  # rater index -> item indices
    for pool in pools:
        members = [i for i, r in enumerate(raters) if r.pool == pool]
        k = min(ratings_per_item, len(members))
        for it_idx in range(len(items)):
            for m in rng.choice(members, size=k, replace=False):
                plan[int(m)].append(it_idx)

    first_assignments: list[Assignment] = []
    first_payload: list[tuple] = []  # (rater, item tuple, payload) parallel to first_assignments
    repeat_specs: list[tuple] = []

    def star_payload(r_meta, item, hint_shown, local_rng):
        q = questions[item[1]]
        resp = item[2]
        t = truth.get(resp) or {}
        keys = [k for k in t if k in by_key] or [
            c.key for c in criteria if c.applies(_QuestionView(q))
        ]
        scores = {}
        for key in keys:
            c = by_key[key]
            span = c.max_score - c.min_score
            centre = t.get(key, (c.min_score + c.max_score) / 2)
            drift = HINT_HIDDEN_DRIFT * span if (not hint_shown and q["reference"]) else 0.0
            x = centre + span * (r_meta["bias"] + local_rng.normal(0, r_meta["noise"])) + drift
            scores[c.pk] = int(np.clip(np.rint(x), c.min_score, c.max_score))
        return scores

    def pair_payload(r_meta, item, left_is_a, local_rng):
        qa = quality.get(item[2], 0.5)
        qb = quality.get(item[3], 0.5)
        dlen = float((item[4] or 0) - (item[5] or 0))
        z = (
            (qa - qb)
            + LENGTH_PREFERENCE * float(np.clip(dlen / 300.0, -1.0, 1.0))
            + r_meta["left_bias"] * (1.0 if left_is_a else -1.0)
            + local_rng.normal(0, r_meta["noise"])
        )
        if z > TIE_BAND:
            return "A"
        if z < -TIE_BAND:
            return "B"
        return "both_bad" if max(qa, qb) < BOTH_BAD_BELOW else "tie"

    for r_idx, item_idxs in sorted(plan.items()):
        rater = raters[r_idx]
        meta = {**_rater_profile(rater.pool, 0, seed), **(rater.meta or {})}
        order = rng.permutation(len(item_idxs))
        n = len(order)
        # Hidden repeats, spaced out: each goes somewhere at least 5 items after its original.
        n_rep = int(rng.binomial(n, repeat_rate)) if n >= 10 else 0
        # Only items with at least five more after them can be repeated at a distance.
        n_rep = min(n_rep, n - 5)
        rep_of = rng.choice(n - 5, size=n_rep, replace=False) if n_rep > 0 else []
        keys = [(float(p), "first", p) for p in range(n)]
        keys += [(float(rng.uniform(p + 5, n + 0.5)), "repeat", int(p)) for p in rep_of]
        keys.sort()
        when = base + dt.timedelta(seconds=float(rng.uniform(0, 2 * 86400)))
        first_index_of_pos: dict[int, int] = {}
        for seq, (_key, what, p) in enumerate(keys, start=1):
            item = items[item_idxs[int(order[p])]]
            length = (item[4] or 0) + (item[5] or 0)
            duration = float(
                np.clip(rng.lognormal(np.log(meta["median_s"]), 0.5) * (1 + length / 3000), 4, 1800)
            )
            served = when
            submitted = served + dt.timedelta(seconds=duration)
            # Short pauses between items and a longer break now and then.
            when = submitted + dt.timedelta(
                seconds=float(rng.exponential(8) + (rng.random() < 0.02) * rng.uniform(600, 7200))
            )
            if hint_policy == Study.HintPolicy.SHOWN:
                hint = True
            elif hint_policy == Study.HintPolicy.RANDOM:
                hint = bool(rng.random() < 0.5)
            else:
                hint = False
            if what == "first":
                left_is_a = bool(rng.random() < 0.5) if pairwise else True
                payload = (
                    pair_payload(meta, item, left_is_a, rng)
                    if pairwise
                    else star_payload(meta, item, hint, rng)
                )
                first_index_of_pos[p] = len(first_assignments)
                first_assignments.append(
                    Assignment(
                        study=study,
                        item_id=item[0],
                        rater=rater,
                        seq=seq,
                        status=Assignment.Status.SUBMITTED,
                        left_is_a=left_is_a,
                        hint_shown=hint,
                        served_at=served,
                        submitted_at=submitted,
                        active_ms=int(duration * 1000 * 0.9),
                    )
                )
                first_payload.append((rater, item, payload, meta))
            else:
                repeat_specs.append((p, served, seq, duration, hint, r_idx, first_index_of_pos))

    Assignment.objects.bulk_create(first_assignments, batch_size=2000)

    repeats: list[Assignment] = []
    repeat_payload: list[tuple] = []
    for p, served, seq, duration, hint, _r_idx, index_of in repeat_specs:
        orig_i = index_of[p]
        orig = first_assignments[orig_i]
        rater, item, payload, meta = first_payload[orig_i]
        left_is_a = (not orig.left_is_a) if pairwise else True
        if rng.random() < meta["stability"]:
            again = payload
        elif pairwise:
            again = pair_payload(meta, item, left_is_a, rng)
        else:
            again = star_payload(meta, item, hint, rng)
        repeats.append(
            Assignment(
                study=study,
                item_id=item[0],
                rater=rater,
                seq=seq,
                status=Assignment.Status.SUBMITTED,
                left_is_a=left_is_a,
                hint_shown=hint,
                is_repeat=True,
                repeat_of=orig,
                served_at=served,
                submitted_at=served + dt.timedelta(seconds=duration),
                active_ms=int(duration * 1000 * 0.9),
            )
        )
        repeat_payload.append((rater, item, again, meta))
    Assignment.objects.bulk_create(repeats, batch_size=2000)

    all_assignments = first_assignments + repeats
    all_payload = first_payload + repeat_payload
    ratings = [
        Rating(
            assignment=a,
            item_id=a.item_id,
            rater=a.rater,
            choice=payload if pairwise else "",
            comment="simulated",
            created_at=a.submitted_at,
            updated_at=a.submitted_at,
        )
        for a, (_r, _i, payload, _m) in zip(all_assignments, all_payload, strict=True)
    ]
    Rating.objects.bulk_create(ratings, batch_size=2000)
    scores = []
    if not pairwise:
        for rating, (_r, _i, payload, _m) in zip(ratings, all_payload, strict=True):
            scores.extend(
                Score(rating=rating, criterion_id=cid, value=v) for cid, v in payload.items()
            )
        Score.objects.bulk_create(scores, batch_size=5000)

    result.assignments = len(all_assignments)
    result.repeats = len(repeats)
    result.ratings = len(ratings)
    result.scores = len(scores)
    per_pool: dict[str, int] = defaultdict(int)
    for a in all_assignments:
        per_pool[a.rater.pool] += 1
    result.per_pool = dict(per_pool)
    result.message = (
        f"Simulated {result.ratings} ratings ({result.repeats} hidden repeats) by "
        f"{result.raters} raters in {', '.join(pools)} for study {study.name!r}."
    )
    return result


class _QuestionView:
    """Just enough of a Question for ``Criterion.applies`` (kind and answer type)."""

    def __init__(self, q: dict):
        self.kind = q["kind"]
        self.answer_type = q["answer_type"]
