"""The annotator's item screen: what the template gets for one exposure (question, answers with
their sides, the criteria or choices, what was already answered, the rater's progress)."""

from __future__ import annotations

from django.urls import reverse
from django.utils import translation
from django.utils.translation import gettext as _

from annotation import engine, inputs
from annotation.models import Assignment, Rater, Rubric


def criteria_rows(a: Assignment, values: dict[str, int]) -> list[dict]:
    zh = translation.get_language() == "zh-hans"
    rows = []
    for c in engine.criteria_for(a.study.rubric_id, a.item.question):
        descs = list(c.descriptions or [])
        stars = []
        for i, value in enumerate(c.stars):
            d = descs[i] if i < len(descs) else {}
            stars.append({"value": value, "desc": (d.get("zh") if zh else d.get("en")) or ""})
        rows.append(
            {
                "key": c.key,
                "label": (c.label_zh if zh else c.label_en) or c.label_en,
                "stars": stars,
                "selected": values.get(c.key),
            }
        )
    return rows


def item_context(
    a: Assignment, rater: Rater, *, posted=None, errors=None, done: int | None = None
) -> dict:
    item = a.item
    rating = getattr(a, "rating", None) if a.status == Assignment.Status.SUBMITTED else None
    values: dict[str, int] = {}
    choice = ""
    if rating is not None:
        values = rating.scores_dict()
        choice = engine.display_choice(rating.choice, left_is_a=a.left_is_a)
    if posted is not None:
        values = {
            k[2:]: n
            for k, v in posted.items()
            if k.startswith("c_") and (n := inputs.small_int(v)) is not None
        }
        choice = posted.get("choice", choice)
    if a.study.mode == Rubric.Mode.PAIRWISE:
        left, right = (
            (item.response_a, item.response_b)
            if a.left_is_a
            else (item.response_b, item.response_a)
        )
        # A pairwise item has both answers; the outer join leaves None only to single ones.
        answers = {"left": left.text if left else "", "right": right.text if right else ""}
    else:
        answers = {"single": item.response_a.text}
    return {
        "study": a.study,
        "assignment": a,
        # Reversed once here rather than twice each in the template.
        "urls": {
            name: reverse(f"annotate:{view}", args=[a.public_id])
            for name, view in (
                ("rate", "assignment"),
                ("skip", "skip"),
                ("previous", "previous"),
                ("lease", "lease"),
            )
        },
        "question": item.question.text,
        "reference": item.question.reference if a.hint_shown else "",
        "answers": answers,
        "criteria": criteria_rows(a, values) if a.study.mode == Rubric.Mode.STAR else [],
        "choices": [
            ("left", _("Left is better")),
            ("tie", _("Tie")),
            ("both_bad", _("Both are bad")),
            ("right", _("Right is better")),
        ],
        "choice": choice,
        "editing": a.status == Assignment.Status.SUBMITTED,
        "errors": errors or [],
        "progress": engine.rater_progress(study=a.study, rater=rater, done=done),
    }
