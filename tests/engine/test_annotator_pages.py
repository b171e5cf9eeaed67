"""Annotator pages through the Django test client: plain forms, htmx fragments, crowd and public
entry, double-blindness and forbidden paths."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User
from django.urls import reverse

from annotation.models import LLM, Assignment, Rater, Rating, Response, Study

from .conftest import crowd_enter, make_rater, make_study

HX = {"HTTP_HX_REQUEST": "true"}


def serve(client, study) -> Assignment:
    response = client.get(reverse("annotate:next", args=[study.public_id]))
    assert response.status_code == 302, response.content[:300]
    pid = response["Location"].rstrip("/").split("/")[-1]
    return Assignment.objects.get(public_id=pid)


def star_post(a: Assignment, value: int = 2) -> dict[str, str]:
    return {
        f"c_{c.key}": str(min(value, c.max_score))
        for c in a.study.rubric.criteria_for(a.item.question)
    }


def test_onsite_annotator_rates_star_items_with_plain_forms(annotator_client, star_study):
    a = serve(annotator_client, star_study)
    page = annotator_client.get(reverse("annotate:assignment", args=[a.public_id]))
    assert page.status_code == 200
    assert a.item.question.text.encode() in page.content
    # One row of stars per criterion, with the per-star descriptions.
    for c in star_study.rubric.criteria_for(a.item.question):
        assert f'name="c_{c.key}"'.encode() in page.content
        assert c.descriptions[0]["en"].encode() in page.content
    response = annotator_client.post(
        reverse("annotate:assignment", args=[a.public_id]), {**star_post(a), "active_ms": "4200"}
    )
    assert response.status_code == 302
    a.refresh_from_db()
    assert a.status == Assignment.Status.SUBMITTED
    assert a.active_ms == 4200
    assert a.submitted_at >= a.served_at
    assert set(a.rating.scores_dict().values()) <= {2}
    nxt = Assignment.objects.get(public_id=response["Location"].rstrip("/").split("/")[-1])
    assert nxt.pk != a.pk and nxt.status == Assignment.Status.SERVED


def test_incomplete_scores_are_refused_with_a_clear_message(annotator_client, star_study):
    a = serve(annotator_client, star_study)
    data = star_post(a)
    data.pop(next(iter(data)))
    response = annotator_client.post(reverse("annotate:assignment", args=[a.public_id]), data)
    assert response.status_code == 400
    assert b"Give a score for" in response.content
    data = {**star_post(a), "c_accuracy": "7"}
    response = annotator_client.post(reverse("annotate:assignment", args=[a.public_id]), data)
    assert response.status_code == 400
    assert b"must be between 1 and 5" in response.content
    assert not Rating.objects.exists()


def test_an_htmx_submit_that_is_refused_is_a_422_fragment_with_the_message(
    annotator_client, star_study
):
    a = serve(annotator_client, star_study)
    data = {**star_post(a), "c_accuracy": "٣"}
    url = reverse("annotate:assignment", args=[a.public_id])
    response = annotator_client.post(url, data, **HX)
    # A client error, not a 200: annotate.js swaps a 422 in so the annotator sees the message.
    assert response.status_code == 422
    assert b"<html" not in response.content and b'role="alert"' in response.content
    response = annotator_client.post(url, {**star_post(a), "active_ms": "1e309"}, **HX)
    assert response.status_code == 422
    assert not Rating.objects.exists()


def test_htmx_submit_swaps_in_the_next_item_fragment(annotator_client, star_study):
    a = serve(annotator_client, star_study)
    response = annotator_client.post(
        reverse("annotate:assignment", args=[a.public_id]), star_post(a), **HX
    )
    assert response.status_code == 200
    assert b"<html" not in response.content
    assert b'id="annotate"' in response.content
    pushed = response["HX-Push-Url"]
    nxt = Assignment.objects.get(public_id=pushed.rstrip("/").split("/")[-1])
    assert nxt.pk != a.pk
    assert str(nxt.public_id).encode() in response.content


def test_pairwise_page_shows_both_answers_and_stores_canonically(annotator_client, pairwise_study):
    a = serve(annotator_client, pairwise_study)
    page = annotator_client.get(reverse("annotate:assignment", args=[a.public_id]))
    left = a.item.response_a if a.left_is_a else a.item.response_b
    right = a.item.response_b if a.left_is_a else a.item.response_a
    html = page.content.decode()
    assert html.index(left.text.split(":")[0]) < html.index(right.text.split(":")[0])
    annotator_client.post(reverse("annotate:assignment", args=[a.public_id]), {"choice": "right"})
    assert Rating.objects.get(assignment=a).choice == ("B" if a.left_is_a else "A")


def test_the_start_page_says_what_the_task_is_when_the_study_has_no_instructions(
    annotator_client, star_study
):
    """An onsite annotator of a study without instructions saw its name and a Start button,
    nothing more; the crowd's start page already had a sentence on the task."""
    url = reverse("annotate:study", args=[star_study.public_id])
    page = annotator_client.get(url).content.decode()
    assert "You will read a question and one or two answers" in page and "data-start" in page
    Study.objects.filter(pk=star_study.pk).update(instructions="Rate **carefully**.")
    page = annotator_client.get(url).content.decode()
    assert "<strong>carefully</strong>" in page and "You will read a question" not in page


def test_skip_and_previous_through_the_pages(annotator_client, star_study):
    a = serve(annotator_client, star_study)
    annotator_client.post(reverse("annotate:assignment", args=[a.public_id]), star_post(a, 1))
    b = serve(annotator_client, star_study)
    response = annotator_client.post(reverse("annotate:skip", args=[b.public_id]))
    assert response.status_code == 302
    b.refresh_from_db()
    assert b.status == Assignment.Status.SKIPPED
    c = serve(annotator_client, star_study)
    assert c.item_id not in (a.item_id, b.item_id)
    response = annotator_client.get(reverse("annotate:previous", args=[c.public_id]))
    assert response["Location"].endswith(f"/a/{a.public_id}/")
    page = annotator_client.get(response["Location"])
    assert b"You are changing a rating" in page.content
    assert b'value="1" checked' in page.content
    annotator_client.post(reverse("annotate:assignment", args=[a.public_id]), star_post(a, 3))
    assert max(Rating.objects.get(assignment=a).scores_dict().values()) == 3
    assert Rating.objects.count() == 1


def test_the_end_page_when_nothing_is_left(client, db, organizer):
    study = make_study(owner=organizer, n_questions=1, n_llms=1)
    rater = make_rater()
    client.force_login(rater.user)
    a = serve(client, study)
    response = client.post(reverse("annotate:assignment", args=[a.public_id]), star_post(a))
    assert response["Location"] == reverse("annotate:done", args=[study.public_id])
    page = client.get(response["Location"])
    assert b"nothing left" in page.content


def test_crowd_worker_arrives_from_prolific_and_leaves_with_the_code(client, db, organizer):
    study = make_study(
        owner=organizer,
        admit_crowd=True,
        quota_crowd=2,
        completion_code="PROLIFIC-OK",
        completion_url="https://app.prolific.com/submissions/complete?cc=PROLIFIC-OK",
    )
    url = reverse("annotate:crowd", args=[study.public_id])
    params = {"PROLIFIC_PID": "p123", "STUDY_ID": "s1", "SESSION_ID": "x9"}
    response = crowd_enter(client, study, params)
    assert response.status_code == 302
    rater = Rater.objects.get(pool="crowd", platform="prolific", external_id="p123")
    assert rater.meta["session_id"] == "x9"
    for _ in range(2):
        a = serve(client, study)
        assert a.rater == rater
        client.post(reverse("annotate:assignment", args=[a.public_id]), star_post(a))
    response = client.get(reverse("annotate:next", args=[study.public_id]))
    done = client.get(response["Location"])
    assert b"PROLIFIC-OK" in done.content
    assert b"app.prolific.com" in done.content
    # Coming back with the same id reuses the rater.
    client.get(url, {"PROLIFIC_PID": "p123", "STUDY_ID": "s1", "SESSION_ID": "x10"})
    assert Rater.objects.filter(external_id="p123").count() == 1


def test_mturk_preview_creates_nobody_and_the_end_posts_to_mturk(client, db, organizer):
    study = make_study(
        owner=organizer, admit_crowd=True, quota_crowd=1, completion_code="TURK1", n_questions=1
    )
    url = reverse("annotate:crowd", args=[study.public_id])
    preview = client.get(url, {"assignmentId": "ASSIGNMENT_ID_NOT_AVAILABLE", "hitId": "h"})
    assert preview.status_code == 200 and b"Preview" in preview.content
    assert not Rater.objects.filter(pool="crowd").exists()
    crowd_enter(
        client,
        study,
        {
            "workerId": "W1",
            "assignmentId": "A1",
            "hitId": "h",
            "turkSubmitTo": "https://workersandbox.mturk.com",
        },
    )
    a = serve(client, study)
    client.post(reverse("annotate:assignment", args=[a.public_id]), star_post(a))
    done = client.get(reverse("annotate:done", args=[study.public_id]))
    assert b'action="https://workersandbox.mturk.com/mturk/externalSubmit"' in done.content
    assert b'name="assignmentId" value="A1"' in done.content


def test_mturk_submit_target_cannot_be_an_arbitrary_site(client, db, organizer):
    study = make_study(owner=organizer, admit_crowd=True, quota_crowd=1, n_questions=1)
    crowd_enter(
        client, study, {"workerId": "W2", "assignmentId": "A2", "turkSubmitTo": "https://evil.test"}
    )
    a = serve(client, study)
    client.post(reverse("annotate:assignment", args=[a.public_id]), star_post(a))
    done = client.get(reverse("annotate:done", args=[study.public_id]))
    assert b"evil.test" not in done.content


def test_crowd_entry_needs_a_worker_id_and_a_crowd_study(client, db, organizer):
    crowd = make_study(owner=organizer, admit_crowd=True)
    assert client.get(reverse("annotate:crowd", args=[crowd.public_id])).status_code == 400
    onsite_only = make_study(owner=organizer)
    response = client.get(
        reverse("annotate:crowd", args=[onsite_only.public_id]), {"PROLIFIC_PID": "p"}
    )
    assert response.status_code == 404


def test_public_sign_up_needs_consent_and_is_rate_limited(client, db, organizer, settings):
    from django.core.cache import cache

    cache.clear()
    study = make_study(owner=organizer, admit_public=True, admit_onsite=False)
    url = reverse("annotate:join", args=[study.public_id])
    response = client.post(url, {"nickname": "Lin"})
    assert response.status_code == 400 and not Rater.objects.filter(pool="public").exists()
    response = client.post(url, {"nickname": "Lin", "consent": "on"})
    assert response.status_code == 302
    rater = Rater.objects.get(pool="public")
    assert rater.nickname == "Lin" and rater.consented_at is not None
    a = serve(client, study)
    assert a.rater == rater
    from annotation.views import annotator as views_annotator

    codes = []
    for i in range(views_annotator.PUBLIC_SIGNUPS_PER_HOUR + 1):
        other = client.__class__()
        codes.append(other.post(url, {"nickname": f"n{i}", "consent": "on"}).status_code)
    assert codes[-1] == 429


def test_public_raters_are_throttled_per_minute(client, db, organizer, monkeypatch):
    from django.core.cache import cache

    from annotation.views import annotator as views_annotator

    cache.clear()
    monkeypatch.setattr(views_annotator, "PUBLIC_REQUESTS_PER_MINUTE", 3)
    study = make_study(owner=organizer, admit_public=True)
    client.post(
        reverse("annotate:join", args=[study.public_id]), {"nickname": "x", "consent": "on"}
    )
    codes = [
        client.get(reverse("annotate:next", args=[study.public_id])).status_code for _ in range(5)
    ]
    assert codes[-1] == 429


def test_a_study_refuses_pools_it_does_not_admit(client, db, organizer):
    study = make_study(owner=organizer, admit_public=False)
    assert client.get(reverse("annotate:join", args=[study.public_id])).status_code == 404
    worker = make_rater(Rater.Pool.PUBLIC)
    session = client.session
    session["annotation_raters"] = {study.public_id: worker.pk}
    session.save()
    response = client.get(reverse("annotate:next", args=[study.public_id]))
    assert response.status_code == 302
    assert not Assignment.objects.filter(rater=worker).exists()


def test_paused_and_draft_studies_serve_nothing(annotator_client, db, organizer):
    paused = make_study(owner=organizer, status=Study.Status.PAUSED)
    response = annotator_client.get(reverse("annotate:next", args=[paused.public_id]))
    assert response.status_code == 302 and "/a/" not in response["Location"]
    draft = make_study(owner=organizer, status=Study.Status.DRAFT)
    assert (
        annotator_client.get(reverse("annotate:study", args=[draft.public_id])).status_code == 404
    )
    assert annotator_client.get(reverse("annotate:next", args=[draft.public_id])).status_code == 404


# -- Double-blind -------------------------------------------------------------------------------


def _annotator_urls(client, study, a):
    return [
        reverse("annotate:study", args=[study.public_id]),
        reverse("annotate:assignment", args=[a.public_id]),
        reverse("annotate:previous", args=[a.public_id]),
        reverse("annotate:done", args=[study.public_id]),
        reverse("annotate:my_studies"),
    ]


@pytest.mark.parametrize("mode", ["star", "pairwise"])
def test_no_model_name_response_id_or_counts_reach_the_annotator(client, db, organizer, mode):
    study = make_study(owner=organizer, mode=mode, hint_policy="shown")
    other = make_rater()
    # Someone else rated things first: their ratings and counts must not leak.
    from annotation import engine

    for _ in range(3):
        o = engine.assignment_next(study=study, rater=other)
        if mode == "pairwise":
            engine.assignment_submit(assignment=o, rater=other, choice="tie")
        else:
            engine.assignment_submit(
                assignment=o,
                rater=other,
                scores={c.key: 1 for c in study.rubric.criteria_for(o.item.question)},
            )
    rater = make_rater()
    client.force_login(rater.user)
    a = serve(client, study)
    bodies = []
    for url in _annotator_urls(client, study, a):
        for headers in ({}, HX):
            r = client.get(url, follow=True, **headers)
            bodies.append(r.content.decode())
    # Fragments after an htmx submit, too.
    post = (
        {"choice": "left"}
        if mode == "pairwise"
        else {f"c_{c.key}": "1" for c in study.rubric.criteria_for(a.item.question)}
    )
    bodies.append(
        client.post(reverse("annotate:assignment", args=[a.public_id]), post, **HX).content.decode()
    )
    secrets = [llm.name for llm in LLM.objects.all()]
    secrets += [r.external_id for r in Response.objects.all()]
    secrets += [other.pseudonym, rater.pseudonym]
    for body in bodies:
        for secret in secrets:
            assert secret not in body, secret
        assert "n_ratings" not in body and "n_reserved" not in body
        # Ids in URLs are UUIDs or the study's public id, never database keys.
        for href in re.findall(r'(?:href|action|hx-get|hx-post)="([^"]+)"', body):
            assert not re.search(r"/(items?|responses?|ratings?)/\d+", href), href


# -- Forbidden paths ----------------------------------------------------------------------------


def test_annotator_b_cannot_open_annotator_as_assignment(client, db, organizer, star_study):
    alice, bob = make_rater(), make_rater()
    client.force_login(alice.user)
    a = serve(client, star_study)
    client.force_login(bob.user)
    for name, method in (
        ("annotate:assignment", "get"),
        ("annotate:assignment", "post"),
        ("annotate:skip", "post"),
        ("annotate:previous", "get"),
    ):
        response = getattr(client, method)(reverse(name, args=[a.public_id]))
        assert response.status_code == 404, name
    a.refresh_from_db()
    assert a.status == Assignment.Status.SERVED


def test_anonymous_visitors_cannot_reach_assignments_or_serve_items(client, db, star_study):
    rater = make_rater()
    from annotation import engine

    a = engine.assignment_next(study=star_study, rater=rater)
    assert client.get(reverse("annotate:assignment", args=[a.public_id])).status_code == 404
    assert client.post(reverse("annotate:skip", args=[a.public_id])).status_code == 404
    response = client.get(reverse("annotate:next", args=[star_study.public_id]))
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]
    response = client.get(reverse("annotate:done", args=[star_study.public_id]))
    assert response.status_code == 302
    assert Assignment.objects.count() == 1


def test_a_crowd_session_cannot_open_an_onsite_annotators_assignment(client, db, star_study):
    onsite = make_rater()
    from annotation import engine

    a = engine.assignment_next(study=star_study, rater=onsite)
    crowd_enter(client, star_study, {"PROLIFIC_PID": "x"})
    assert client.get(reverse("annotate:assignment", args=[a.public_id])).status_code == 404


def test_an_account_without_a_rater_gets_no_annotator_list(client, outsider):
    client.force_login(outsider)
    assert client.get(reverse("annotate:my_studies")).status_code == 404


def test_invitation_link_sets_a_password_once(client, db, organizer):
    from annotation.views.organizer import onsite_annotator_create

    rater, invite = onsite_annotator_create(username="dan", password="", invited_by=organizer)
    assert not rater.user.has_usable_password()
    page = client.get(invite)
    assert page.status_code == 200
    response = client.post(
        invite, {"new_password1": "a-long-pass-123", "new_password2": "a-long-pass-123"}
    )
    assert response.status_code == 302
    assert User.objects.get(username="dan").check_password("a-long-pass-123")
    client.logout()
    assert client.get(invite).status_code == 404


def test_pages_speak_chinese_from_the_browser_language(annotator_client, star_study):
    a = serve(annotator_client, star_study)
    url = reverse("annotate:assignment", args=[a.public_id])
    zh = annotator_client.get(url, HTTP_ACCEPT_LANGUAGE="zh-CN,zh;q=0.9").content.decode()
    assert "提交结果" in zh and "上一条" in zh and "跳过" in zh
    criterion = star_study.rubric.criteria_for(a.item.question)[0]
    assert criterion.label_zh in zh and criterion.descriptions[0]["zh"] in zh
    en = annotator_client.get(url, HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "Submit" in en and criterion.label_en in en


def test_the_language_can_be_switched(annotator_client, star_study):
    annotator_client.post("/i18n/setlang/", {"language": "zh-hans", "next": "/"})
    page = annotator_client.get(reverse("annotate:study", args=[star_study.public_id]))
    assert "开始" in page.content.decode()


def test_the_pairwise_fragment_follows_each_requests_language(annotator_client, pairwise_study):
    # The fragment's wording is translated once per process and language: a Chinese request,
    # then an English one, then Chinese again each get their own words.
    a = serve(annotator_client, pairwise_study)
    url = reverse("annotate:assignment", args=[a.public_id])
    pages = {
        lang: annotator_client.get(url, HTTP_ACCEPT_LANGUAGE=lang, **HX).content.decode()
        for lang in ("zh-CN", "en", "zh-CN")
    }
    assert "哪个回答更好？" in pages["zh-CN"] and "左边好" in pages["zh-CN"]
    assert "Which answer is better?" not in pages["zh-CN"]
    assert "Which answer is better?" in pages["en"] and "Left is better" in pages["en"]
    assert "左边好" not in pages["en"]


def test_another_organizers_annotator_account_cannot_read_or_rate_an_onsite_study(
    client, db, organizer, other_organizer
):
    """Bob makes an onsite account of his own roster, signs in with it and tries Alice's onsite
    study: it is not listed, nothing is served and none of her questions or answers is shown.
    (It used to be listed and served: Bob read Alice's private dataset by rating it.)"""
    from annotation.roster import onsite_annotator_create

    study = make_study(owner=organizer, dataset_kw={"questions": ["alice-private question"]})
    bobs, _ = onsite_annotator_create(
        username="bobs-helper", password="", invited_by=other_organizer
    )
    client.force_login(bobs.user)
    listing = client.get(reverse("annotate:my_studies")).content.decode()
    assert study.public_id not in listing and study.name not in listing
    page = client.get(reverse("annotate:next", args=[study.public_id]), follow=True)
    assert "alice-private" not in page.content.decode()
    assert not Assignment.objects.filter(rater=bobs).exists()
    # Alice's own annotator, and a shared account made without an inviter, still rate it.
    alices, _ = onsite_annotator_create(username="alices-helper", password="", invited_by=organizer)
    shared = make_rater()
    for rater in (alices, shared):
        client.force_login(rater.user)
        client.get(reverse("annotate:next", args=[study.public_id]))
        assert Assignment.objects.filter(rater=rater, study=study).count() == 1
