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
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
from django.db import transaction
from django.db.models import Avg, Max

from annotation.limits import MAX_QUESTIONS, MAX_RATINGS_PER_ITEM, MAX_SEED, check_ranges
from annotation.models import (
    Assignment,
    Criterion,
    Item,
    Question,
    Rater,
    Rubric,
    Score,
    Study,
)
from annotation.recording import NewRating, ratings_record_bulk
from ranking.warm import reports_warm

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
    study_name: str = ""
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
    pools, raters_per_pool: int, start_index: int, seed: int, *, refresh: bool, owner=None
) -> list[Rater]:
    """The simulated raters, created on first use; ``refresh`` redraws an existing rater's
    profile from the seed (a forced re-simulation starts from scratch)."""
    from annotation.importers.ownership import named_rater

    out = []
    for pool in pools:
        for i in range(start_index + 1, start_index + raters_per_pool + 1):
            name = f"sim-{pool}-{i:02d}"
            rater = named_rater(owner, name)  # the study owner's: never another's
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
                    owner=owner,
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


def _reset(study: Study, *, force: bool, more: bool) -> int | None:
    """The first new rater number, or None when the study already has simulated ratings and
    neither force nor more was asked for."""
    existing = _simulated_assignments(study)
    if not existing.exists():
        return 0
    if force:
        existing.delete()
        return 0
    return _next_index(study) if more else None


def _items(study: Study, rng, max_items: int | None) -> list[tuple]:
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
    return items


def _truth(study: Study, by_key: dict) -> dict[int, dict[str, float]]:
    """Per response and criterion, the mean real human score (else the judges')."""
    item_filter = {"rating__item__study": study}
    human = _real_scores(item_filter, Rater.Kind.HUMAN)
    judge = _real_scores(item_filter, Rater.Kind.JUDGE)
    truth: dict[int, dict[str, float]] = defaultdict(dict)
    for source in (judge, human):  # human overrides judge
        for (resp, key), mean in source.items():
            if key in by_key:
                truth[resp][key] = mean
    return truth


def _plan(raters: list[Rater], pools, n_items: int, ratings_per_item: int, rng) -> dict:
    """Who rates what: rater index -> item indices, ratings_per_item raters of each pool.

    The load is balanced, as a real study's assignment is: each item goes to the k members
    with the fewest items so far (ties broken at random), so every rater gets work whenever
    there are as many item slots as raters."""
    plan: dict[int, list[int]] = defaultdict(list)
    for pool in pools:
        members = [i for i, r in enumerate(raters) if r.pool == pool]
        k = min(ratings_per_item, len(members))
        load = dict.fromkeys(members, 0)
        for it_idx in range(n_items):
            order = rng.permutation(members)
            for m in sorted(order, key=lambda m: load[int(m)])[:k]:
                load[int(m)] += 1
                plan[int(m)].append(it_idx)
    return plan


@dataclass
class _Sim:
    """One simulation's inputs and draws; payloads are scores (star) or a choice (pairwise)."""

    study: Study
    rng: np.random.Generator
    items: list[tuple]
    repeat_rate: float
    seed: int = 0
    pairwise: bool = False
    questions: dict = field(default_factory=dict)
    criteria: list = field(default_factory=list)
    by_key: dict = field(default_factory=dict)
    truth: dict | None = None
    quality: dict | None = None
    base: dt.datetime | None = None

    def star_payload(self, r_meta, item, hint_shown, local_rng):
        q = self.questions[item[1]]
        t = self.truth.get(item[2]) or {}
        keys = [k for k in t if k in self.by_key] or [
            c.key for c in self.criteria if c.applies(_QuestionView(q))
        ]
        scores = {}
        for key in keys:
            c = self.by_key[key]
            span = c.max_score - c.min_score
            centre = t.get(key, (c.min_score + c.max_score) / 2)
            drift = HINT_HIDDEN_DRIFT * span if (not hint_shown and q["reference"]) else 0.0
            x = centre + span * (r_meta["bias"] + local_rng.normal(0, r_meta["noise"])) + drift
            scores[c.pk] = int(np.clip(np.rint(x), c.min_score, c.max_score))
        return scores

    def pair_payload(self, r_meta, item, left_is_a, local_rng):
        qa = self.quality.get(item[2], 0.5)
        qb = self.quality.get(item[3], 0.5)
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

    def payload(self, meta, item, *, hint: bool, left_is_a: bool):
        if self.pairwise:
            return self.pair_payload(meta, item, left_is_a, self.rng)
        return self.star_payload(meta, item, hint, self.rng)

    def hint(self) -> bool:
        policy = self.study.hint_policy
        if policy == Study.HintPolicy.RANDOM:
            return bool(self.rng.random() < 0.5)
        return policy == Study.HintPolicy.SHOWN

    def row(self, rater, item, payload, **exposure) -> NewRating:
        return NewRating(
            study_id=self.study.pk,
            item_id=item[0],
            rater_id=rater.pk,
            choice=payload if self.pairwise else "",
            scores={} if self.pairwise else payload,
            comment="simulated",
            **exposure,
        )

    def sequence(self, n: int) -> list[tuple[float, str, int]]:
        """A rater's exposures: n firsts in order and about repeat_rate hidden repeats, each at
        least five items after its original."""
        rng = self.rng
        n_rep = int(rng.binomial(n, self.repeat_rate)) if n >= 10 else 0
        n_rep = min(n_rep, n - 5)  # only items with five more after them can be repeated
        rep_of: Iterable[int] = rng.choice(n - 5, size=n_rep, replace=False) if n_rep > 0 else []
        keys = [(float(p), "first", p) for p in range(n)]
        keys += [(float(rng.uniform(p + 5, n + 0.5)), "repeat", int(p)) for p in rep_of]
        return sorted(keys)

    def rater_rows(self, rater: Rater, item_idxs: list[int], firsts: list, pending: list) -> None:
        """The rater's first exposures (appended to firsts as (row, item, meta)) and the
        repeats still to draw (appended to pending)."""
        rng = self.rng
        meta = {**_rater_profile(rater.pool, 0, self.seed), **(rater.meta or {})}
        order = rng.permutation(len(item_idxs))
        keys = self.sequence(len(order))
        assert self.base is not None, "simulate_ratings sets the start time first"
        when = self.base + dt.timedelta(seconds=float(rng.uniform(0, 2 * 86400)))
        first_of_pos: dict[int, tuple] = {}
        for seq, (_key, what, p) in enumerate(keys, start=1):
            item = self.items[item_idxs[int(order[p])]]
            length = (item[4] or 0) + (item[5] or 0)
            duration = float(
                np.clip(rng.lognormal(np.log(meta["median_s"]), 0.5) * (1 + length / 3000), 4, 1800)
            )
            served, submitted = when, when + dt.timedelta(seconds=duration)
            # Short pauses between items and a longer break now and then.
            when = submitted + dt.timedelta(
                seconds=float(rng.exponential(8) + (rng.random() < 0.02) * rng.uniform(600, 7200))
            )
            hint = self.hint()
            exposure = {"seq": seq, "hint_shown": hint, "served_at": served}
            exposure |= {"submitted_at": submitted, "active_ms": int(duration * 1000 * 0.9)}
            if what == "first":
                left_is_a = bool(rng.random() < 0.5) if self.pairwise else True
                payload = self.payload(meta, item, hint=hint, left_is_a=left_is_a)
                row = self.row(rater, item, payload, left_is_a=left_is_a, **exposure)
                first_of_pos[p] = (row, item, meta)
                firsts.append(first_of_pos[p])
            else:
                pending.append((first_of_pos, p, rater, exposure))

    def repeat_row(self, first: tuple, rater: Rater, exposure: dict) -> NewRating:
        row, item, meta = first
        left_is_a = (not row.left_is_a) if self.pairwise else True  # sides swapped
        payload = row.choice if self.pairwise else row.scores
        if self.rng.random() >= meta["stability"]:
            payload = self.payload(meta, item, hint=exposure["hint_shown"], left_is_a=left_is_a)
        return self.row(
            rater, item, payload, left_is_a=left_is_a, is_repeat=True, repeat_of=row, **exposure
        )


def _setup(study: Study, rng, items: list[tuple], repeat_rate: float, seed: int) -> _Sim:
    sim = _Sim(study=study, rng=rng, items=items, repeat_rate=repeat_rate, seed=seed)
    sim.pairwise = study.mode == Rubric.Mode.PAIRWISE
    sim.questions = {
        q["id"]: q
        for q in Question.objects.filter(id__in={it[1] for it in items}).values(
            "id", "kind", "answer_type", "reference"
        )
    }
    sim.criteria = list(Criterion.objects.filter(rubric_id=study.rubric_id))
    sim.by_key = {c.key: c for c in sim.criteria}
    if sim.pairwise:
        sim.quality = _response_quality(study)
    else:
        sim.truth = _truth(study, sim.by_key)
    # Times: sessions starting in the four days before the newest real rating (or the study's
    # creation), so that simulated ratings never lie in the future.
    latest = Assignment.objects.filter(study=study).aggregate(t=Max("submitted_at"))["t"]
    sim.base = (latest or study.created_at).replace(microsecond=0) - dt.timedelta(days=4)
    return sim


def _summary(result: SimulationResult, rows: list[NewRating], counts: dict, raters, pools):
    by_id = {r.pk: r.pool for r in raters}
    result.assignments = counts["assignments"]
    result.repeats = sum(1 for r in rows if r.is_repeat)
    result.ratings = counts["ratings"]
    result.scores = counts["scores"]
    per_pool: dict[str, int] = defaultdict(int)
    for r in rows:
        per_pool[by_id[r.rater_id]] += 1
    result.per_pool = dict(per_pool)
    result.message = (
        f"Simulated {result.ratings} ratings ({result.repeats} hidden repeats) by "
        f"{result.raters} raters in {', '.join(pools)} for study {result.study_name!r}."
    )


MAX_RATERS_PER_POOL = 1000  # far above any demo; more would run for days


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
    seed on the same data gives the same ratings. Written by the shared ratings_record_bulk.
    """
    unknown = [p for p in pools if p not in PROFILES]
    if unknown:
        raise ValueError(f"Unknown pools: {', '.join(unknown)} (use {', '.join(POOLS)}).")
    check_ranges(
        raters_per_pool=(raters_per_pool, 1, MAX_RATERS_PER_POOL), seed=(seed, 0, MAX_SEED),
        ratings_per_item=(ratings_per_item, 1, MAX_RATINGS_PER_ITEM),
        max_items=(1 if max_items is None else max_items, 1, MAX_QUESTIONS),
    )  # fmt: skip
    result = SimulationResult(study_id=study.pk, study_name=study.name)
    start_index = _reset(study, force=force, more=more)
    if start_index is None:
        result.skipped = True
        result.message = (
            f"Study {study.name!r} already has simulated ratings; nothing added "
            "(use force to replace them or more to add another round)."
        )
        return result
    rng = np.random.default_rng([seed, study.pk, start_index])
    raters = _raters(pools, raters_per_pool, start_index, seed, refresh=force, owner=study.owner)
    result.raters = len(raters)
    items = _items(study, rng, max_items)
    if not items:
        result.message = "The study has no items."
        return result
    sim = _setup(study, rng, items, repeat_rate, seed)
    firsts: list[tuple] = []
    pending: list[tuple] = []
    for r_idx, item_idxs in sorted(_plan(raters, pools, len(items), ratings_per_item, rng).items()):
        sim.rater_rows(raters[r_idx], item_idxs, firsts, pending)
    rows = [f[0] for f in firsts]
    rows += [sim.repeat_row(first_of[p], rater, exp) for first_of, p, rater, exp in pending]
    counts = ratings_record_bulk(rows=rows)
    reports_warm([study.pk])  # the study's report, queued when it is large
    _summary(result, rows, counts, raters, pools)
    return result


class _QuestionView:
    """Just enough of a Question for ``Criterion.applies`` (kind and answer type)."""

    def __init__(self, q: dict):
        self.kind = q["kind"]
        self.answer_type = q["answer_type"]
