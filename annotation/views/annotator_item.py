"""The annotator's item screen: what the template gets for one exposure (question, answers with
their sides, the criteria or choices, what was already answered, the rater's progress)."""

from __future__ import annotations

from functools import cache
from uuid import UUID

from django.conf import settings
from django.urls import get_script_prefix, get_urlconf, reverse
from django.utils import translation
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from annotation import engine, inputs
from annotation.models import Assignment, Rater, Rubric

# The item page's links by name, each to a view that takes the assignment's public id.
ITEM_VIEWS = {"rate": "assignment", "skip": "skip", "previous": "previous", "lease": "lease"}
_PLACEHOLDER = UUID(int=0)


@cache
def _url_patterns(prefix: str, urlconf: object) -> dict[str, str]:
    """The links of ITEM_VIEWS with a placeholder id, reversed once per script prefix and URL
    configuration."""
    return {
        name: reverse(f"annotate:{view}", args=[_PLACEHOLDER]) for name, view in ITEM_VIEWS.items()
    }


def item_urls(assignment_pid: UUID) -> dict[str, str]:
    """What reverse() would give for each link of the item page, without resolving four URL
    patterns on every request: the placeholder id is replaced by this assignment's."""
    patterns = _url_patterns(get_script_prefix(), get_urlconf() or settings.ROOT_URLCONF)
    pid = str(assignment_pid)
    return {name: url.replace(str(_PLACEHOLDER), pid) for name, url in patterns.items()}


# The item fragment's fixed wording, per language: {% translate %} costs a lazy string, a
# catalogue look-up and a localize per tag on every render (about a fifth of the fragment's
# time); these are looked up once per process and language.
# Each entry is stored whole, in one assignment: a server thread never sees half of one.
_LABELS: dict[str, tuple[dict[str, str], list[tuple[str, str]]]] = {}


def _remaining(n: int) -> str:
    """The progress line in the plural form for n (the template's {% blocktranslate count %})."""
    return ngettext(
        "Done %(done)s · %(remaining)s rating still needed in this study",
        "Done %(done)s · %(remaining)s ratings still needed in this study",
        n,
    )


def _item_labels() -> dict[str, str]:
    return {
        "msg_error": _("That did not work; your answers are still here. Please try again."),
        "msg_offline": _(
            "The server could not be reached; nothing was sent and your answers are still "
            "here. Try again when you are back online."
        ),
        "progress": _("Your progress"),
        # The progress line's two forms ({% blocktranslate %} in the full page's template).
        "done_quota": _("Done %(done)s / %(quota)s"),
        "done_remaining": _remaining(2),
        "done_remaining_one": _remaining(1),
        "guidelines": _("Guidelines"),
        "editing": _("You are changing a rating you already gave."),
        "question": _("Question"),
        "left": _("Left answer"),
        "right": _("Right answer"),
        "reference": _("Reference answer"),
        "which": _("Which answer is better?"),
        "answer": _("Answer"),
        "empty_answer": _("(The model gave an empty answer.)"),
        "fine": _("Fine-grained rating"),
        "per_criterion": _("Rate the answer on each criterion below."),
        "save_change": _("Save change"),
        "submit": _("Submit"),
        "previous": _("Previous"),
        "skip": _("Skip"),
        "keys_pairwise": _("Keys: 1-4 choose, Enter submits, S skips, Backspace or ← goes back."),
        "keys_star": _(
            "Keys: digits give stars criterion by criterion, Enter submits, S skips, "
            "Backspace or ← goes back."
        ),
        # Said only where a criterion's stars reach 10 without a 0 (annotate.js's starFor).
        "keys_ten": _("0 gives 10 on a 1-10 scale."),
        "keys_arrows": _("On a focused star, ← and → move the star."),
    }


def item_labels() -> tuple[dict[str, str], list[tuple[str, str]]]:
    """The fragment's wording and the pairwise choices (value, label) in the active language,
    translated once per process and language."""
    language = translation.get_language() or ""
    entry = _LABELS.get(language)
    if entry is None:
        choices = [
            ("left", _("Left is better")),
            ("tie", _("Tie")),
            ("both_bad", _("Both are bad")),
            ("right", _("Right is better")),
        ]
        entry = _LABELS[language] = (_item_labels(), choices)
    return entry


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
                "described": any(s["desc"] for s in stars),  # no "1★ ; 2★★" without meanings
                "selected": values.get(c.key),
            }
        )
    return rows


def zero_is_ten(rows: list[dict]) -> bool:
    """Whether the 0 key gives 10 on some criterion of the screen: its stars reach 10 and have
    no 0 (what annotate.js's starFor does), so that the hint is shown only where it holds."""
    for row in rows:
        values = {s["value"] for s in row["stars"]}
        if 10 in values and 0 not in values:
            return True
    return False


def item_context(
    a: Assignment, rater: Rater, *, posted=None, errors=None, done: int | None = None
) -> dict:
    item = a.item
    labels, choices = item_labels()
    if done is None:  # the page's read counts it (exposure_reads.EXPOSURE)
        done = getattr(a, "rater_submitted", None)
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
    criteria = criteria_rows(a, values) if a.study.mode == Rubric.Mode.STAR else []
    return {
        "study": a.study,
        "assignment": a,
        "urls": item_urls(a.public_id),
        "question": item.question.text,
        "reference": item.question.reference if a.hint_shown else "",
        "answers": answers,
        "criteria": criteria,
        "zero_is_ten": zero_is_ten(criteria),
        "t": labels,
        "choices": choices,
        "choice": choice,
        "editing": a.status == Assignment.Status.SUBMITTED,
        "errors": errors or [],
        "progress": engine.rater_progress(study=a.study, rater=rater, done=done),
    }
