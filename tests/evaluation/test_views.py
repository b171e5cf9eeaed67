"""Organizer pages and API for judges: what organizers can do, and everything others cannot."""

from __future__ import annotations

import pytest
from django.urls import reverse

from evaluation.models import JudgeConfig, JudgeRun, PromptTemplate
from evaluation.runner import execute_run
from evaluation.services import judge_config_create, judge_run_create

from .conftest import KEY_ENV


@pytest.fixture
def alice_run(make_study, make_judge, fake):
    """A finished run of Alice's judge on Alice's study, with a parse failure whose raw output
    is hostile HTML."""
    study = make_study(["Fine?", "Bad <<fake:malformed>>"], n_llms=1)
    run = judge_run_create(study=study, judge=make_judge(name="alice-gpt4"), repeat_rate=0)
    run = execute_run(run.pk, backoff=0.01)
    call = run.calls.get(parse_status="failed")
    call.raw_output = "<script>alert('x')</script> no stars"
    call.save()
    return run


def page_urls(run):
    study_id = run.study_id
    return [
        ("get", reverse("judges:list")),
        ("get", reverse("judges:new")),
        ("get", reverse("judges:templates")),
        ("get", reverse("judges:run_start", args=[study_id])),
        ("get", reverse("judges:run", args=[run.pk])),
        ("post", reverse("judges:run_cancel", args=[run.pk])),
        ("post", reverse("judges:run_resume", args=[run.pk])),
        ("post", reverse("judges:run_reparse", args=[run.pk])),
    ]


def api_urls(run):
    return [
        ("get", reverse("judges_api:judges")),
        ("post", reverse("judges_api:judge_create")),
        ("get", reverse("judges_api:templates")),
        ("post", reverse("judges_api:template_create")),
        ("get", reverse("judges_api:runs")),
        ("post", reverse("judges_api:run_start")),
        ("get", reverse("judges_api:run", args=[run.pk])),
        ("get", reverse("judges_api:run_failures", args=[run.pk])),
        ("post", reverse("judges_api:run_cancel", args=[run.pk])),
        ("post", reverse("judges_api:run_resume", args=[run.pk])),
        ("post", reverse("judges_api:run_reparse", args=[run.pk])),
    ]


def test_anonymous_visitors_are_sent_to_login_and_refused_by_the_api(client, alice_run):
    for method, url in page_urls(alice_run):
        r = getattr(client, method)(url)
        assert r.status_code == 302 and "/accounts/login/" in r["Location"], url
    for method, url in api_urls(alice_run):
        assert getattr(client, method)(url).status_code in (401, 403), url


def test_annotators_get_403_everywhere(annotator_client, alice_run):
    for method, url in page_urls(alice_run) + api_urls(alice_run):
        assert getattr(annotator_client, method)(url).status_code == 403, url


def test_another_organizer_cannot_see_or_touch_alices_runs_studies_or_judges(
    client, other_organizer, alice_run
):
    client.force_login(other_organizer)
    for method, url in page_urls(alice_run)[3:] + api_urls(alice_run)[6:]:
        assert getattr(client, method)(url).status_code == 404, url
    assert "alice-gpt4" not in client.get(reverse("judges:list")).content.decode()
    assert client.get(reverse("judges_api:judges")).json() == []
    assert client.get(reverse("judges_api:runs")).json()["results"] == []
    r = client.post(
        reverse("judges_api:run_start"),
        {"study": alice_run.study_id, "judge": alice_run.judge_id},
        format="json",
    )
    assert r.status_code == 404
    alice_run.refresh_from_db()
    assert alice_run.status == "done" and JudgeRun.objects.count() == 1


def judge_form(base_url: str, **changes: str) -> dict[str, str]:
    """What the new-judge page posts, with these fields changed."""
    fields = {
        "name": "gpt4",
        "model": "gpt-4-0613",
        "base_url": base_url,
        "api_key_env": KEY_ENV,
        "temperature": "0",
        "max_tokens": "512",
        "seed": "0",
        "template": "",
        "price_in_per_1k": "0.03",
        "price_out_per_1k": "0.06",
        "json_mode": "auto",
        "concurrency": "4",
        "timeout_s": "30",
        "max_attempts": "3",
    }
    return fields | changes


def test_organizer_creates_a_judge_from_the_page_with_a_key_variable_name(organizer_client, fake):
    r = organizer_client.post(reverse("judges:new"), judge_form(fake.base_url))
    assert r.status_code == 302
    judge = JudgeConfig.objects.get(name="gpt4")
    assert (
        judge.rater.kind == "judge" and judge.rater.name == "gpt4" and judge.api_key_env == KEY_ENV
    )


def test_a_pasted_key_is_refused_as_the_key_variable(organizer_client, fake):
    form = judge_form(fake.base_url, name="oops", api_key_env="sk-proj-abc123-def")
    r = organizer_client.post(reverse("judges:new"), form)
    # The form offers only the approved variables: a pasted key is not one of them.
    assert r.status_code == 200 and "Select a valid choice" in r.content.decode()
    assert not JudgeConfig.objects.filter(name="oops").exists()


def test_organizer_template_with_an_unknown_placeholder_is_refused_on_the_page(organizer_client):
    template = {"key": "mine", "name": "Mine", "kind": "star", "parser": "stars"}
    user = "Rate {answer} for {question} using {api_key}"
    r = organizer_client.post(reverse("judges:templates"), {**template, "user": user})
    assert r.status_code == 200 and "Unknown placeholder(s): {api_key}" in r.content.decode()
    assert not PromptTemplate.objects.filter(key="mine").exists()
    user = "Rate {answer} for {question}.\n{criteria}"
    r = organizer_client.post(reverse("judges:templates"), {**template, "user": user})
    assert r.status_code == 302 and PromptTemplate.objects.get(key="mine").builtin is False


def test_starting_a_run_from_the_page_runs_it_through_the_task_queue(
    organizer_client, immediate_tasks, make_study, make_judge, fake
):
    study = make_study(["Q1?", "Q2?"], mode="pairwise", rubric="pairwise", n_llms=2)
    judge = make_judge()
    form = {"judge": judge.pk, "both_orders": "on", "repeat_rate": "0", "seed": "3"}
    r = organizer_client.post(reverse("judges:run_start", args=[study.pk]), form)
    # First the pre-flight and the estimate, with nothing written or called yet.
    page = r.content.decode()
    assert r.status_code == 200 and 'id="estimate-total"' in page
    assert 'name="confirmed" value="on"' in page
    assert not JudgeRun.objects.exists() and fake.paid() == []
    r = organizer_client.post(
        reverse("judges:run_start", args=[study.pk]), {**form, "confirmed": "on"}
    )
    run = JudgeRun.objects.get(study=study)
    assert r.status_code == 302 and r["Location"] == reverse("judges:run", args=[run.pk])
    assert run.status == "done" and run.both_orders and run.n_done == 4 and run.task_id
    page = organizer_client.get(reverse("judges:run", args=[run.pk])).content.decode()
    assert 'id="position-consistency"' in page


def test_the_run_page_shows_parse_failures_with_escaped_raw_output(organizer_client, alice_run):
    page = organizer_client.get(reverse("judges:run", args=[alice_run.pk])).content.decode()
    # Where the run's ratings end up: the study's report, one click away.
    assert f'href="{reverse("ranking:report", args=[alice_run.study_id])}"' in page
    assert '<td class="num" id="n-parse-failed">1</td>' in page
    assert "no scores found" in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; no stars" in page
    assert "<script>alert" not in page


def test_the_progress_fragment_is_served_to_htmx(organizer_client, alice_run):
    r = organizer_client.get(
        reverse("judges:run", args=[alice_run.pk]) + "?part=progress",
        headers={"HX-Request": "true"},
    )
    body = r.content.decode()
    assert r.status_code == 200 and body.strip().startswith(
        '<section class="card" id="run-progress"'
    )
    assert "<html" not in body


def test_the_polled_fragment_brings_the_failures_list_along(organizer_client, alice_run):
    """The page polls only its counts: a run that finished while one watched said "Parse
    failures 1" above "No failures." until a reload. The fragment now carries the list, swapped
    out of band into its place."""
    r = organizer_client.get(
        reverse("judges:run", args=[alice_run.pk]) + "?part=progress",
        headers={"HX-Request": "true"},
    )
    body = r.content.decode()
    assert '<section class="card" id="failures" hx-swap-oob="true">' in body
    assert "no scores found" in body and "No failures." not in body
    page = organizer_client.get(reverse("judges:run", args=[alice_run.pk])).content.decode()
    assert '<section class="card" id="failures">' in page  # the full page: in place, no oob


def test_reparse_and_cancel_buttons(organizer_client, alice_run, fake):
    calls = len(fake.log)
    r = organizer_client.post(reverse("judges:run_reparse", args=[alice_run.pk]), follow=True)
    assert "Re-parsed without calling the API" in r.content.decode() and len(fake.log) == calls
    r = organizer_client.post(reverse("judges:run_cancel", args=[alice_run.pk]), follow=True)
    assert "nothing to cancel" in r.content.decode()
    queued = judge_run_create(study=alice_run.study, judge=alice_run.judge)
    organizer_client.post(reverse("judges:run_cancel", args=[queued.pk]))
    queued.refresh_from_db()
    assert queued.status == "cancelled"


def test_api_creates_a_judge_starts_a_run_and_reports_it(
    organizer_client, immediate_tasks, make_study, fake
):
    r = organizer_client.post(
        reverse("judges_api:judge_create"),
        {
            "name": "api-judge",
            "base_url": fake.base_url,
            "api_key_env": KEY_ENV,
            "price_in_per_1k": "0.01",
            "price_out_per_1k": "0.02",
            "concurrency": 2,
        },
        content_type="application/json",
    )
    assert r.status_code == 201, r.content
    judge_id = r.json()["id"]
    study = make_study(["Q?"], n_llms=2)
    r = organizer_client.post(
        reverse("judges_api:run_start"),
        {"study": study.pk, "judge": judge_id, "repeat_rate": 0},
        content_type="application/json",
    )
    assert r.status_code == 201, r.content
    data = r.json()
    assert data["status"] == "done" and data["done"] == 2 and data["ok"] == 2
    from decimal import Decimal

    expected = Decimal(data["tokens_in"]) / 1000 * Decimal("0.01") + Decimal(
        data["tokens_out"]
    ) / 1000 * Decimal("0.02")
    assert Decimal(data["cost"]) == expected
    run_id = data["id"]
    failures = organizer_client.get(reverse("judges_api:run_failures", args=[run_id])).json()
    assert failures["count"] == 0 and failures["results"] == []
    r = organizer_client.post(reverse("judges_api:run_reparse", args=[run_id]))
    assert r.json() == {"changed": 0, "ok": 2, "parse_failed": 0}


def test_api_refuses_bad_input_with_clear_messages(organizer_client, make_study, fake):
    r = organizer_client.post(
        reverse("judges_api:judge_create"),
        {"name": "x", "api_key_env": "has space"},
        content_type="application/json",
    )
    assert r.status_code == 400 and "api_key_env" in r.json()
    r = organizer_client.post(
        reverse("judges_api:template_create"),
        {
            "key": "bad",
            "name": "Bad",
            "kind": "pairwise",
            "parser": "choice",
            "user": "{question} {answer_1}",
        },
        content_type="application/json",
    )
    assert r.status_code == 400 and "{answer_2}" in str(r.json())


def test_the_schema_documents_the_judge_api(organizer_client):
    r = organizer_client.get(reverse("api-schema"))
    assert r.status_code == 200
    text = r.content.decode()
    assert "/api/judges/runs/start/" in text and "RunIn" in text


def test_the_judge_and_run_forms_speak_chinese(organizer_client, make_study, fake):
    zh = {"HTTP_ACCEPT_LANGUAGE": "zh-hans"}
    page = organizer_client.get(reverse("judges:new"), **zh).content.decode()
    for label in ["最大输出词元数", "每千输入词元价格", "最多尝试次数", "提示词模板"]:
        assert label in page
    assert "max tokens" not in page.lower().replace("max_tokens", "")
    study = make_study(["Q?"])
    page = organizer_client.get(reverse("judges:run_start", args=[study.pk]), **zh)
    assert "重复率" in page.content.decode() and "随机种子" in page.content.decode()
    english = organizer_client.get(reverse("judges:new"), HTTP_ACCEPT_LANGUAGE="en")
    assert "Max tokens" in english.content.decode()


def test_the_judge_list_says_which_pseudonym_each_judge_has_in_reports(organizer_client, alice_run):
    # Reports name judges by their rater's pseudonym; a newcomer with two judges could not tell
    # which row of the report was which.
    pseudonym = alice_run.judge.rater.pseudonym
    html = organizer_client.get(reverse("judges:list")).content.decode()
    assert "In reports as" in html
    row = next(line for line in html.splitlines() if "alice-gpt4" in line)
    assert f"<code>{pseudonym}</code>" in row


@pytest.mark.parametrize("field", ["limit", "seed", "budget", "repeat_rate"])
@pytest.mark.parametrize("value", ["٣", "３", "1_0"])
def test_the_run_api_refuses_numbers_in_other_scripts(organizer_client, alice_run, field, value):
    body = {"study": alice_run.study_id, "judge": alice_run.judge_id, field: value}
    r = organizer_client.post(
        reverse("judges_api:run_start"), body, content_type="application/json"
    )
    assert r.status_code == 400
    assert r.json()[field] == ["Write the number with the digits 0-9."]
    assert JudgeRun.objects.count() == 1


def test_a_judge_without_runs_can_be_edited_and_keeps_its_rater(organizer_client, organizer, fake):
    # A newcomer who typed a model the server does not offer had no way to fix the judge.
    judge = judge_config_create(name="typo", owner=organizer, model="gpt-4-typo")
    url = reverse("judges:edit", args=[judge.pk])
    assert "gpt-4-typo" in organizer_client.get(url).content.decode()
    form = judge_form(fake.base_url, name="fixed", model="fake-judge")
    r = organizer_client.post(url, form)
    assert r.status_code == 302, r.content.decode()[-2000:]
    judge.refresh_from_db()
    assert (judge.name, judge.model, judge.rater.name) == ("fixed", "fake-judge", "fixed")
    assert JudgeConfig.objects.filter(owner=organizer).count() == 1


def test_a_judge_with_runs_is_not_edited(organizer_client, alice_run, fake):
    judge = alice_run.judge
    model = judge.model
    url = reverse("judges:edit", args=[judge.pk])
    assert organizer_client.get(url).status_code == 302
    r = organizer_client.post(url, judge_form(fake.base_url, name="renamed", model="other"))
    assert r.status_code == 302
    judge.refresh_from_db()
    assert (judge.name, judge.model) == ("alice-gpt4", model)
    html = organizer_client.get(reverse("judges:list")).content.decode()
    assert url not in html


def test_the_run_page_without_judges_links_to_a_new_judge_and_lays_fields_out_one_a_row(
    organizer_client, make_study, make_judge
):
    # A newcomer's first visit: an empty judge menu was a dead end, and the fields ran together
    # on one line ("Judge: [menu]Judge each pair in both orders: Repeat rate: ...").
    study = make_study(["Q?"])
    url = reverse("judges:run_start", args=[study.pk])
    page = organizer_client.get(url).content.decode()
    assert 'id="no-judge"' in page and f'href="{reverse("judges:new")}"' in page
    fields = ["judge", "repeat_rate", "limit", "seed", "budget", "mode"]
    assert page.count('<div class="field">') == len(fields)
    assert 'name="both_orders"' not in page  # a star study has no pairs
    make_judge()
    assert 'id="no-judge"' not in organizer_client.get(url).content.decode()
