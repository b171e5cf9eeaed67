"""Hostile input to the judge forms and API (NUL bytes, huge numbers, other scripts' digits, random
text): a clear 4xx or a form error, never a 5xx, and nothing written. Run it on PostgreSQL too
(NUL in text is PostgreSQL's refusal)."""

from __future__ import annotations

import pytest
from django.urls import reverse
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from evaluation.models import JudgeConfig, JudgeRun

from .conftest import KEY_ENV

HOSTILE = ["\x00", "a\x00b", "²", "٣٣", "9" * 5000, "-1", "NaN", "Infinity", "1e308", "", " ", "☃"]
JUDGE_FIELDS = ["name", "model", "base_url", "api_key_env", "temperature", "max_tokens", "seed"]
JUDGE_FIELDS += ["price_in_per_1k", "concurrency", "timeout_s", "max_attempts", "json_mode"]
JUDGE_FIELDS += ["rpm_limit", "tpm_limit"]
RUN_FIELDS = ["study", "judge", "repeat_rate", "limit", "seed", "budget", "both_orders"]


def _judge_body(fake) -> dict:
    return {
        "name": "hostile",
        "model": "fake-judge",
        "base_url": fake.base_url,
        "api_key_env": KEY_ENV,
        "temperature": "0",
        "max_tokens": "10",
        "seed": "0",
        "price_in_per_1k": "0.01",
        "price_out_per_1k": "0.01",
        "json_mode": "auto",
        "concurrency": "1",
        "timeout_s": "5",
        "max_attempts": "1",
    }


@pytest.mark.parametrize("field", JUDGE_FIELDS)
@pytest.mark.parametrize("value", HOSTILE)
def test_hostile_judge_fields_never_500_and_write_nothing_but_valid_judges(
    organizer_client, fake, field, value
):
    body = {**_judge_body(fake), field: value}
    r = organizer_client.post(
        reverse("judges_api:judge_create"), body, content_type="application/json"
    )
    assert r.status_code in (201, 400), (field, value, r.status_code)
    page = organizer_client.post(reverse("judges:new"), {**body, "name": "hostile-page"})
    assert page.status_code in (200, 302), (field, value, page.status_code)
    for judge in JudgeConfig.objects.all():  # whatever was accepted is clean
        assert "\x00" not in judge.name + judge.model + judge.base_url
        assert judge.api_key_env in (KEY_ENV, "OPENAI_API_KEY")
        assert 0 <= judge.price_in_per_1k <= 1000


@pytest.mark.parametrize("field", RUN_FIELDS)
@pytest.mark.parametrize("value", HOSTILE)
def test_hostile_run_fields_never_500_and_start_nothing(
    organizer_client, make_study, make_judge, fake, field, value
):
    study = make_study(["Q?"], n_llms=1)
    judge = make_judge()
    body = {"study": study.pk, "judge": judge.pk, "repeat_rate": "0", "seed": "0"}
    body[field] = value
    r = organizer_client.post(
        reverse("judges_api:run_start"), {**body, "dry_run": True}, content_type="application/json"
    )
    assert r.status_code in (200, 400, 404), (field, value, r.status_code)
    form = {**body, "judge": body["judge"]}
    page = organizer_client.post(reverse("judges:run_start", args=[study.pk]), form)
    assert page.status_code == 200, (field, value, page.status_code)
    assert not JudgeRun.objects.exists() and fake.paid() == []


@hsettings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    field=st.sampled_from(RUN_FIELDS),
    value=st.one_of(st.text(), st.integers(), st.floats(), st.none(), st.booleans()),
)
def test_random_values_in_any_run_field_never_500(
    organizer_client, make_study, make_judge, fake, field, value
):
    study = make_study(["Q?"], n_llms=1)
    judge = make_judge()
    body = {"study": study.pk, "judge": judge.pk, "dry_run": True, field: value}
    r = organizer_client.post(
        reverse("judges_api:run_start"), body, content_type="application/json"
    )
    assert r.status_code in (200, 400, 404), (field, value, r.status_code)
    assert not JudgeRun.objects.exists()
