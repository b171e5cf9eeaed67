"""Editing and deleting one's own rubric on the rubrics page: allowed while no study uses it;
once one does, the page says so and offers a copy instead (ratings keep their meaning), and an
edit or delete is refused with a 409 that writes nothing. Built-in rubrics are read-only (403).
Hostile input is a 4xx with nothing written."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from annotation.models import Criterion, Rubric
from tests.factories import make_study

pytestmark = pytest.mark.django_db

CRITERIA = "helpfulness | Helpfulness | 有用性 | 1-3 | Bad / 差; Fair; Good / 好\n"


@pytest.fixture(autouse=True)
def _english():
    from django.utils import translation

    with translation.override("en"):
        yield


def _data(**overrides) -> dict:
    return {"key": "mine", "name_en": "Mine", "name_zh": "", "description": "",
            "criteria": CRITERIA} | overrides  # fmt: skip


@pytest.fixture
def mine(organizer_client) -> Rubric:
    assert organizer_client.post(reverse("organize:rubrics"), _data()).status_code == 302
    return Rubric.objects.get(key="mine")


def _edit(rubric: Rubric) -> str:
    return reverse("organize:rubric_edit", args=[rubric.pk])


def _delete(rubric: Rubric) -> str:
    return reverse("organize:rubric_delete", args=[rubric.pk])


def _snapshot(rubric: Rubric) -> tuple:
    rubric.refresh_from_db()
    criteria = list(rubric.criteria.values_list("key", "label_en", "min_score", "max_score"))
    return (rubric.key, rubric.name_en, rubric.description, criteria)


def test_the_owner_edits_an_unused_rubric(organizer_client, mine):
    page = organizer_client.get(reverse("organize:rubrics")).content.decode()
    assert f'href="{_edit(mine)}"' in page and 'data-delete="mine"' in page
    form = organizer_client.get(_edit(mine))
    assert form.status_code == 200
    # The form holds the criteria as they were typed, so a save without changes keeps them.
    assert form.context["form"].initial["criteria"] == CRITERIA.strip()
    r = organizer_client.post(
        _edit(mine),
        _data(
            key="mine-v2",
            name_en="Renamed",
            criteria="clarity | Clarity | 清晰 | 0-4 | | objective",
        ),
    )
    assert r.status_code == 302, r.content.decode()[:2000]
    assert _snapshot(mine) == ("mine-v2", "Renamed", "", [("clarity", "Clarity", 0, 4)])
    assert mine.criteria.get().applies_to == "objective"
    assert Criterion.objects.filter(rubric=mine).count() == 1


def test_a_used_rubric_is_kept_and_offered_as_a_copy(organizer_client, organizer, mine):
    make_study(owner=organizer, rubric="mine")
    before = _snapshot(mine)
    page = organizer_client.get(reverse("organize:rubrics")).content.decode()
    assert 'data-used="mine"' in page and f'href="{_edit(mine)}"' not in page
    assert f"?copy={mine.pk}" in page
    for r in (
        organizer_client.get(_edit(mine)),
        organizer_client.post(_edit(mine), _data(name_en="Changed")),
        organizer_client.post(_delete(mine)),
    ):
        assert r.status_code == 409
        html = r.content.decode().replace("&#x27;", "'")
        assert "A study uses the rubric mine, so it is kept as it is" in html
        assert f"?copy={mine.pk}" in html
    assert _snapshot(mine) == before
    # The copy: the same criteria under a free key, a new rubric of the organizer's.
    copy = organizer_client.get(reverse("organize:rubrics"), {"copy": mine.pk})
    initial = copy.context["form"].initial
    assert initial["key"] == "mine-copy" and initial["criteria"] == CRITERIA.strip()
    r = organizer_client.post(reverse("organize:rubrics"), initial | {"name_en": "Mine, v2"})
    assert r.status_code == 302
    new = Rubric.objects.get(key="mine-copy")
    assert new.owner == organizer and new.pk != mine.pk
    assert new.criteria.get().descriptions == mine.criteria.get().descriptions
    assert _snapshot(mine) == before


def test_a_copy_of_a_builtin_rubric_keeps_which_questions_each_criterion_is_for(
    organizer_client,
):
    initial = (
        organizer_client.get(
            reverse("organize:rubrics"), {"copy": Rubric.objects.get(key="llmeval2").pk}
        )
        .context["form"]
        .initial
    )
    r = organizer_client.post(reverse("organize:rubrics"), initial)
    assert r.status_code == 302
    original = Rubric.objects.get(key="llmeval2", builtin=True)
    copy = Rubric.objects.get(key="llmeval2-copy")
    fields = ("key", "min_score", "max_score", "applies_to", "descriptions")
    assert list(copy.criteria.values_list(*fields)) == list(original.criteria.values_list(*fields))


def test_delete_asks_to_confirm_first_then_deletes_an_unused_rubric(organizer_client, mine):
    """The list's Delete opens a confirmation page (no JavaScript needed); neither it nor a POST
    without the confirmation deletes anything; the confirmation's button does."""
    listing = organizer_client.get(reverse("organize:rubrics")).content.decode()
    assert f'<a href="{_delete(mine)}" data-delete="mine">' in listing
    asked = organizer_client.get(_delete(mine))
    page = asked.content.decode()
    assert asked.status_code == 200 and 'id="delete-confirm"' in page
    assert 'name="confirm" value="delete"' in page and f'action="{_delete(mine)}"' in page
    unconfirmed = organizer_client.post(_delete(mine))
    assert unconfirmed.status_code == 200 and 'id="delete-confirm"' in unconfirmed.content.decode()
    assert Rubric.objects.filter(pk=mine.pk).exists() and mine.criteria.exists()
    r = organizer_client.post(_delete(mine), {"confirm": "delete"})
    assert r.status_code == 302
    assert not Rubric.objects.filter(pk=mine.pk).exists()
    assert not Criterion.objects.filter(rubric_id=mine.pk).exists()


def test_built_in_rubrics_are_read_only(organizer_client):
    builtin = Rubric.objects.get(key="llmeval1")
    n = builtin.criteria.count()
    for r in (
        organizer_client.get(_edit(builtin)),
        organizer_client.post(_edit(builtin), _data(key="llmeval1", name_en="x")),
        organizer_client.post(_delete(builtin)),
    ):
        assert r.status_code == 403
        assert "The rubric llmeval1 is not yours to change" in r.content.decode()
    builtin.refresh_from_db()
    assert builtin.name_en == "LLMEval-1 star scoring" and builtin.criteria.count() == n


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("name_en", "a\x00b", "Null characters are not allowed."),
        ("criteria", "a | A\x00 | | 1-3", "Null characters are not allowed."),
        ("criteria", "a | A | | 1-99999999999999999999", "stars must be written low-high"),
        ("criteria", "a | A | | \u0661-\u0663", "stars must be written low-high"),  # ١-٣
        ("criteria", "a | A | | 1-\uff13", "stars must be written low-high"),  # full-width 3
        ("criteria", "a | A | | 1-3 | | " + "x" * 300, "at most 200 characters"),
        ("key", "llmeval2", "A rubric with the key llmeval2 exists."),
        ("key", "m\u00e9", "Enter a valid"),
    ],
)
def test_hostile_edits_are_refused_with_nothing_written(
    organizer_client, mine, field, value, message
):
    before = _snapshot(mine)
    r = organizer_client.post(_edit(mine), _data(name_en="Changed") | {field: value})
    assert r.status_code == 400
    assert message in r.content.decode().replace("&#x27;", "'")
    assert _snapshot(mine) == before


@pytest.mark.parametrize("raw", ["\u0663", "\uff15", "99999999999999999999", "1e3", "-1", "x"])
def test_hostile_copy_ids_are_not_found(organizer_client, raw):
    r = organizer_client.get(reverse("organize:rubrics"), {"copy": raw})
    assert r.status_code == 404


@pytest.mark.parametrize("rubric_id", [0, 2**63, 10**30])
def test_missing_or_huge_ids_are_not_found(organizer_client, rubric_id):
    before = Rubric.objects.count()
    assert organizer_client.get(f"/organize/rubrics/{rubric_id}/").status_code == 404
    assert organizer_client.post(f"/organize/rubrics/{rubric_id}/delete/").status_code == 404
    assert Rubric.objects.count() == before


def test_the_saved_and_deleted_messages_name_the_rubric_in_the_pages_language(organizer_client):
    organizer_client.cookies["django_language"] = "zh-hans"
    said = []
    for url, data in (
        (reverse("organize:rubrics"), _data(name_zh="我的标准")),
        (None, _data(name_en="Mine again", name_zh="我的标准二")),
        (None, None),
    ):
        rubric = Rubric.objects.filter(key="mine").first()
        if data is None:
            r = organizer_client.post(_delete(rubric), {"confirm": "delete"}, follow=True)
        else:
            r = organizer_client.post(url or _edit(rubric), data, follow=True)
        said.append(" ".join(str(m) for m in r.context["messages"]))
    assert "我的标准" in said[0] and "Mine" not in said[0]
    assert "我的标准二" in said[1] and "Mine again" not in said[1]
    assert "我的标准二" in said[2] and "Mine again" not in said[2]


def test_two_rubrics_of_one_name_are_told_apart_by_key_in_the_study_form(organizer_client, mine):
    copy = organizer_client.get(reverse("organize:rubrics"), {"copy": mine.pk})
    assert organizer_client.post(reverse("organize:rubrics"), copy.context["form"].initial)
    assert Rubric.objects.filter(name_en="Mine").count() == 2
    page = organizer_client.get(reverse("organize:study_new")).content.decode()
    options = re.findall(r'<option value="\d+"(?: selected)?>([^<]*Mine[^<]*)</option>', page)
    assert sorted(options) == ["Mine (mine)", "Mine (mine-copy)"]
    assert ">LLMEval-1 star scoring<" in page  # a name no other rubric has stays as it is
