"""Annotator quality control of a study: check ratings scored against their accepted answers,
per-annotator figures and flags, exclusions, and the approve/reject list for crowd platforms.

An exclusion leaves an annotator's ratings in the database (nothing is deleted) and out of the
report, which lists every exclusion. Annotators appear by pseudonym; worker ids only in the
approve/reject list, which only the study's owner (or a superuser) can download.
"""

from __future__ import annotations

import pandas as pd
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Count, Q
from django.utils.translation import gettext as _

from annotation.cells import escape_formula
from annotation.checks import MAX_CELL
from annotation.models import Assignment, Exclusion, Item, Rater, Rating, Score, Study
from ranking.selectors import StudyFrames, study_frames
from ranking.stats.annotator_flags import CHECK_COLUMNS, annotator_flags, check_passed
from ranking.stats.reliability import pair_reliability, star_reliability

EXCLUSION_COLUMNS = ["rater_id", "pool", "reason", "n_ratings", "created_at"]
RELIABILITY_COLUMNS = [
    "rater_id", "pool", "mode", "n_ratings", "reliability", "agrees_with_ds", "star_bias",
    "star_sigma",
]  # fmt: skip
GOLD_COLUMNS = ["pool", "check_kind", "n_raters", "n_ratings", "n_passed", "accuracy"]


def check_ratings(study: Study) -> pd.DataFrame:
    """One row per submitted first rating of a check item by a human (``CHECK_COLUMNS`` plus
    item_id and rating_id), ``passed`` measured against the item's accepted answer."""
    rows = list(
        Rating.objects.filter(
            assignment__study=study,
            assignment__status=Assignment.Status.SUBMITTED,
            assignment__is_repeat=False,
            rater__kind=Rater.Kind.HUMAN,
        )
        .exclude(item__check_kind="")
        .values_list(
            "id",
            "rater__pseudonym",
            "rater__pool",
            "item_id",
            "item__check_kind",
            "item__check_answer",
            "choice",
        )  # fmt: skip
    )
    scores: dict[int, dict[str, int]] = {}
    star_ids = [r[0] for r in rows if not r[6]]
    for rating_id, key, value in Score.objects.filter(rating_id__in=star_ids).values_list(
        "rating_id", "criterion__key", "value"
    ):
        scores.setdefault(rating_id, {})[key] = value
    records = [
        (
            who,
            pool,
            kind,
            check_passed(answer or {}, choice=choice, scores=scores.get(rid)),
            item,
            rid,
        )
        for rid, who, pool, item, kind, answer, choice in rows
    ]
    return pd.DataFrame.from_records(records, columns=[*CHECK_COLUMNS, "item_id", "rating_id"])


def _skips(study: Study, **where) -> list[tuple[str, str]]:
    """(pseudonym, pool) of each assignment a human skipped in the study, matching ``where``."""
    rows = Assignment.objects.filter(
        study=study, status=Assignment.Status.SKIPPED, rater__kind=Rater.Kind.HUMAN, **where
    )
    return list(rows.values_list("rater__pseudonym", "rater__pool").order_by("pk"))


def skipped_attention_checks(study: Study) -> pd.DataFrame:
    """An attention check a human skipped, as a failed check (``CHECK_COLUMNS``): its text says
    what to answer, so skipping it is the only way to dodge it. A skipped gold item, which looks
    like any item, is no failure."""
    rows = _skips(study, is_repeat=False, item__check_kind=Item.CheckKind.ATTENTION)
    records = [(who, pool, Item.CheckKind.ATTENTION, False) for who, pool in rows]
    return pd.DataFrame.from_records(records, columns=list(CHECK_COLUMNS))


def skipped_repeats(study: Study) -> pd.DataFrame:
    """One row per hidden repeat a human skipped (rater_id, pool): the annotator has rated the
    item before, so the skip is the way to dodge the self-consistency measure (flag
    ``repeat_skipped``)."""
    return pd.DataFrame.from_records(_skips(study, is_repeat=True), columns=["rater_id", "pool"])


def excluded_pseudonyms(study: Study) -> set[str]:
    return set(Exclusion.objects.filter(study=study).values_list("rater__pseudonym", flat=True))


def study_quality(study: Study) -> pd.DataFrame:
    """Per human annotator of the study: figures, flags and whether they are excluded (all
    annotators, excluded ones included, so an exclusion can be reviewed and lifted)."""
    frames = study_frames(study)
    checks, skipped = check_ratings(study), skipped_attention_checks(study)
    if not skipped.empty:
        frames_ = [f for f in (checks[list(CHECK_COLUMNS)], skipped) if not f.empty]
        checks = pd.concat(frames_, ignore_index=True)
    table = annotator_flags(frames.star_df, frames.pair_df, checks, skipped_repeats(study))
    reasons = dict(Exclusion.objects.filter(study=study).values_list("rater__pseudonym", "reason"))
    table["excluded"] = table["rater_id"].isin(reasons)
    table["exclusion_reason"] = [reasons.get(r, "") for r in table["rater_id"]]
    return table


def _study_rater(study: Study, pseudonym: str) -> Rater:
    rater = (
        Rater.objects.filter(pseudonym=str(pseudonym)[:64], kind=Rater.Kind.HUMAN)
        .filter(assignments__study=study)
        .first()
    )
    if rater is None:
        raise ValidationError(
            _("No annotator %(who)s in this study.") % {"who": str(pseudonym)[:40]}
        )
    return rater


@transaction.atomic
def exclusion_add(*, study: Study, pseudonym: str, reason: str, user) -> Exclusion:
    """Leave an annotator out of the study's report, with a reason (shown in the report)."""
    reason = (reason or "").strip()
    if not reason:
        raise ValidationError(_("Give a reason for the exclusion."))
    if "\x00" in reason or len(reason) > MAX_CELL:
        raise ValidationError(
            _("The reason must be at most %(n)d characters of text.") % {"n": MAX_CELL}
        )
    rater = _study_rater(study, pseudonym)
    try:
        with transaction.atomic():
            return Exclusion.objects.create(
                study=study, rater=rater, reason=reason, created_by=user
            )
    except IntegrityError as e:
        raise ValidationError(_("This annotator is already excluded.")) from e


def exclusion_lift(*, study: Study, pseudonym: str) -> None:
    """Bring an excluded annotator back into the report."""
    n, _deleted = Exclusion.objects.filter(
        study=study, rater__pseudonym=str(pseudonym)[:64]
    ).delete()
    if not n:
        raise ValidationError(_("This annotator is not excluded."))


def exclusions_table(study: Study) -> pd.DataFrame:
    """The report's list of exclusions: who (pseudonym), pool, reason, how many submitted
    ratings were left out, and when."""
    rows = (
        Exclusion.objects.filter(study=study)
        .annotate(
            n=Count(
                "rater__ratings",
                filter=Q(
                    rater__ratings__assignment__study=study,
                    rater__ratings__assignment__status=Assignment.Status.SUBMITTED,
                ),
            )
        )
        .values_list("rater__pseudonym", "rater__pool", "reason", "n", "created_at")
        .order_by("created_at", "id")
    )
    return pd.DataFrame.from_records(list(rows), columns=EXCLUSION_COLUMNS)


def exclusions_stamp(study: Study) -> str:
    """Changes whenever the set of exclusions does (for the report's cache key)."""
    return ",".join(
        f"{pk}:{rater}"
        for pk, rater in Exclusion.objects.filter(study=study)
        .order_by("pk")
        .values_list("pk", "rater_id")
    )


def check_items_count(study: Study) -> dict[str, int]:
    counts = dict(
        Item.objects.filter(study=study)
        .exclude(check_kind="")
        .values_list("check_kind")
        .annotate(n=Count("id"))
    )
    return {"gold": counts.get("gold", 0), "attention": counts.get("attention", 0)}


PLATFORM_COLUMNS = {
    "prolific": ["participant_id", "decision", "reason"],
    "mturk": ["AssignmentId", "WorkerId", "Approve", "Reject", "RequesterFeedback"],
}


def approval_rows(study: Study, platform: str) -> list[list[str]]:
    """The approve/reject list of a crowd platform: every worker of that platform with a
    submitted rating in the study; an excluded worker is rejected with the exclusion's reason.
    Cells that a spreadsheet would run as a formula are escaped."""
    if platform not in PLATFORM_COLUMNS:
        raise ValidationError(_("Unknown platform."))
    reasons = dict(Exclusion.objects.filter(study=study).values_list("rater_id", "reason"))
    raters = (
        Rater.objects.filter(pool=Rater.Pool.CROWD, platform=platform)
        .filter(assignments__study=study, assignments__status=Assignment.Status.SUBMITTED)
        .distinct()
        .order_by("external_id")
    )
    rows = []
    for rater in raters:
        reason = reasons.get(rater.pk, "")
        if platform == "prolific":
            row = [rater.external_id, "REJECT" if reason else "APPROVE", reason]
        else:
            assignment = str(_link_id(rater, study, "assignment_id"))
            row = [assignment, rater.external_id, "" if reason else "x", reason, reason]
        rows.append([escape_formula(cell) for cell in row])
    return [PLATFORM_COLUMNS[platform], *rows]


def _link_id(rater: Rater, study: Study, name: str) -> object:
    """A platform id from the crowd link the rater opened `study` with (views/entry.py,
    with_link_ids); from their latest link when their meta predates the per-study ids."""
    meta = rater.meta or {}
    links = meta.get("links") or {}
    if study.public_id in links:
        return links[study.public_id].get(name, "")
    return meta.get(name, "")


def _without(df: pd.DataFrame, excluded: set[str]) -> pd.DataFrame:
    return df[~df["rater_id"].isin(excluded)].reset_index(drop=True) if excluded else df


def reliability_table(star_df: pd.DataFrame, pair_df: pd.DataFrame) -> pd.DataFrame:
    """Per human annotator and mode: Dawid-Skene reliability (pairwise) or the bias + noise
    model's bias and sigma (star), with reliability = 1 / sigma for stars."""
    parts = []
    for mode, df, fit in (
        ("pairwise", pair_df, pair_reliability),
        ("star", star_df, star_reliability),
    ):
        humans = df[(df["rater_kind"] == "human")] if len(df) else df
        table = fit(humans)
        if table.empty:
            continue
        if mode == "star":
            table["reliability"] = 1.0 / table["star_sigma"]
        else:
            table = table.rename(columns={"ds_reliability": "reliability"})
        pools = humans.drop_duplicates("rater_id").set_index("rater_id")["pool"]
        parts.append(table.assign(mode=mode, pool=table["rater_id"].map(pools)))
    if not parts:
        return pd.DataFrame(columns=RELIABILITY_COLUMNS)
    out = pd.concat(parts, ignore_index=True).reindex(columns=RELIABILITY_COLUMNS)
    return out.sort_values(["mode", "reliability"], ascending=[True, False]).reset_index(drop=True)


def gold_by_pool(checks: pd.DataFrame) -> pd.DataFrame:
    """Per pool and check kind: annotators, check ratings, passed, accuracy."""
    if checks.empty:
        return pd.DataFrame(columns=GOLD_COLUMNS)
    g = checks.assign(passed=checks["passed"].astype(int)).groupby(["pool", "check_kind"])
    out = g.agg(
        n_raters=("rater_id", "nunique"), n_ratings=("passed", "size"), n_passed=("passed", "sum")
    )
    out["accuracy"] = out["n_passed"] / out["n_ratings"]
    return out.reset_index()[GOLD_COLUMNS]


def report_quality(
    study: Study, frames: StudyFrames
) -> tuple[StudyFrames, dict[str, pd.DataFrame]]:
    """The report's frames without excluded annotators, and its quality tables: exclusions,
    annotator_reliability and gold_by_pool (excluded annotators left out of the last two)."""
    excluded = excluded_pseudonyms(study)
    frames = StudyFrames(_without(frames.star_df, excluded), _without(frames.pair_df, excluded))
    tables = {
        "exclusions": exclusions_table(study),
        "annotator_reliability": reliability_table(frames.star_df, frames.pair_df),
        "gold_by_pool": gold_by_pool(_without(check_ratings(study), excluded)),
    }
    return frames, tables
