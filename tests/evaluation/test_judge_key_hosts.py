"""The operator's OpenAI key goes to OpenAI only (JUDGE_KEY_HOSTS).

A judge names an approved key variable and a URL; the runner sends the variable's value to that
URL. Without a binding, any organizer could point a judge at a public server of their own and
receive the operator's key with the first call. Runs against the fake OpenAI-compatible server.
"""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from evaluation.models import JudgeConfig
from evaluation.runner import execute_run
from evaluation.services import judge_config_create, judge_run_create
from tests.evaluation.conftest import KEY_ENV

pytestmark = pytest.mark.django_db

OPENAI_BOUND = [("OPENAI_API_KEY", "api.openai.com")]


@pytest.fixture(autouse=True)
def _bound(settings):
    settings.JUDGE_KEY_HOSTS = OPENAI_BOUND


def test_the_openai_key_variable_is_refused_for_another_host(organizer_client):
    with pytest.raises(ValidationError, match="only sent to api.openai.com"):
        judge_config_create(
            name="grab", api_key_env="OPENAI_API_KEY", base_url="https://collector.example/v1"
        )
    body = {"name": "grab", "api_key_env": "OPENAI_API_KEY",
            "base_url": "https://collector.example/v1"}  # fmt: skip
    r = organizer_client.post(reverse("judges_api:judge_create"), body, "application/json")
    assert r.status_code == 400 and "JUDGE_KEY_HOSTS" in str(r.json()["base_url"])
    form = organizer_client.post(reverse("judges:new"), {**body, "temperature": 0})
    assert "JUDGE_KEY_HOSTS" in form.content.decode()
    assert not JudgeConfig.objects.exists()


def test_its_own_host_and_unbound_variables_are_accepted(db):
    judge_config_create(name="openai", api_key_env="OPENAI_API_KEY",
                        base_url="https://api.openai.com/v1")  # fmt: skip
    judge_config_create(name="own", api_key_env=KEY_ENV, base_url="https://collector.example/v1")
    assert JudgeConfig.objects.count() == 2


def test_an_old_judge_row_never_sends_the_bound_key_elsewhere(
    make_study, make_judge, fake, monkeypatch
):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-operator-secret")
    judge = make_judge()  # saved with an unbound variable, then switched behind the checks
    study = make_study(["Q?"], n_llms=1)
    run = judge_run_create(study=study, judge=judge, repeat_rate=0)
    JudgeConfig.objects.filter(pk=judge.pk).update(api_key_env="OPENAI_API_KEY")
    run.params = {**run.params, "api_key_env": "OPENAI_API_KEY"}
    run.save(update_fields=["params"])
    result = execute_run(run.pk, backoff=0.01)
    assert result.status == "failed" and "JUDGE_KEY_HOSTS" in result.error
    assert "sk-operator-secret" not in result.error
    assert fake.log == []  # no request left, so no key either


def test_the_bound_key_is_never_sent_in_clear_text_even_to_its_own_host(organizer_client):
    with pytest.raises(ValidationError, match="only sent over https"):
        judge_config_create(
            name="plain", api_key_env="OPENAI_API_KEY", base_url="http://api.openai.com/v1"
        )
    body = {
        "name": "plain",
        "api_key_env": "OPENAI_API_KEY",
        "base_url": "http://API.openai.com./v1",
    }
    r = organizer_client.post(reverse("judges_api:judge_create"), body, "application/json")
    assert r.status_code == 400 and "https" in str(r.json()["base_url"])
    assert not JudgeConfig.objects.exists()
