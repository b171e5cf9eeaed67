"""Judges cannot leak the server's secrets or reach its network (issue 11, item 8): approved key
variables only, an endpoint allow-list with private addresses refused, short scrubbed error text,
sane prices. Each rule is checked in the model (form, API, admin alike) and again at run time."""

from __future__ import annotations

import asyncio
import os
import threading
from decimal import Decimal

import aiohttp
import pytest
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.urls import reverse

from evaluation import safety
from evaluation.models import JudgeConfig, JudgeRun
from evaluation.runner import execute_run
from evaluation.services import judge_config_create, judge_run_create

from .conftest import KEY_ENV
from .listener import Listener

SECRETS = ["HOME", "SECRET_KEY", "DATABASE_URL", "PATH"]


def _api_judge(client, **fields):
    body = {"name": "api-judge", "base_url": "http://127.0.0.1:9/v1", "api_key_env": KEY_ENV}
    return client.post(
        reverse("judges_api:judge_create"), {**body, **fields}, content_type="application/json"
    )


@pytest.mark.parametrize("name", SECRETS)
def test_a_judge_naming_a_server_variable_is_refused_by_the_model_and_the_api(
    organizer_client, name
):
    with pytest.raises(ValidationError, match="not an approved key variable"):
        judge_config_create(name="leak", api_key_env=name, base_url="http://127.0.0.1:9/v1")
    r = _api_judge(organizer_client, api_key_env=name)
    assert r.status_code == 400 and "not an approved key variable" in str(r.json()["api_key_env"])
    assert not JudgeConfig.objects.exists()


def test_the_form_offers_only_approved_variables_and_refuses_home(organizer_client):
    page = organizer_client.get(reverse("judges:new")).content.decode()
    assert f'value="{KEY_ENV}"' in page and 'value="HOME"' not in page
    r = organizer_client.post(reverse("judges:new"), {"name": "leak", "api_key_env": "HOME"})
    assert r.status_code == 200 and "Select a valid choice" in r.content.decode()
    assert not JudgeConfig.objects.exists()


def test_the_admin_refuses_a_server_variable_and_a_metadata_url(client, make_judge):
    judge = make_judge(name="admin-judge")
    admin = User.objects.create_superuser("root", password="root-pass-123")
    client.force_login(admin)
    url = reverse("admin:evaluation_judgeconfig_change", args=[judge.pk])
    form = {
        "name": judge.name,
        "model": judge.model,
        "base_url": "http://169.254.169.254/v1",
        "api_key_env": "SECRET_KEY",
        "temperature": "0",
        "max_tokens": "10",
        "seed": "0",
        "price_in_per_1k": "-1",
        "price_out_per_1k": "99999",
        "json_mode": "auto",
        "concurrency": "1",
        "timeout_s": "5",
        "max_attempts": "1",
        "created_at_0": "2026-01-01",
        "created_at_1": "00:00:00",
    }
    r = client.post(url, form)
    page = r.content.decode()
    assert r.status_code == 200
    assert "not an approved key variable" in page and "169.254.169.254" in page
    assert "Ensure this value is greater than or equal to 0" in page
    assert "Ensure this value is less than or equal to 1000" in page
    judge.refresh_from_db()
    assert judge.api_key_env == KEY_ENV and judge.base_url.startswith("http://127.0.0.1")
    listing = client.get(reverse("admin:evaluation_judgeconfig_changelist")).content.decode()
    assert "admin-judge" in listing and 'alt="True"' in listing  # key set, value never shown
    assert os.environ[KEY_ENV] not in listing


def test_home_never_leaves_as_a_bearer_token_even_from_an_old_judge_row(
    make_study, make_judge, monkeypatch
):
    study = make_study(["Q?"], n_llms=1)
    with Listener() as spy:
        judge = make_judge(name="spy", base_url=spy.base_url, max_attempts=1)
        # The control: an approved variable does reach the listener, so it would see HOME too.
        run = judge_run_create(study=study, judge=judge, repeat_rate=0)
        execute_run(run.pk, backoff=0.01)
        assert spy.authorizations() == [f"Bearer {os.environ[KEY_ENV]}"]
        # A row written before the rules (or past the validators) names HOME: the runner
        # checks again and sends nothing.
        spy.requests.clear()
        JudgeConfig.objects.filter(pk=judge.pk).update(api_key_env="HOME")
        judge.refresh_from_db()
        run2 = judge_run_create(study=study, judge=judge, repeat_rate=0, limit=1)
        JudgeRun.objects.filter(pk=run2.pk).update(params={**run2.params, "api_key_env": "HOME"})
        result = execute_run(run2.pk, backoff=0.01)
        assert result.status == "failed" and "HOME is not an approved key variable" in result.error
        assert spy.requests == []
        assert os.environ.get("HOME", "/root") not in result.error


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/v1",  # cloud metadata (link-local)
        "http://[fe80::1]/v1",
        "http://10.0.0.5/v1",
        "http://192.168.1.1/v1",
        "http://100.64.0.1/v1",  # carrier-grade NAT
        "http://[::1]:8000/v1",
        "http://127.0.0.2/v1",  # loopback, but not the listed 127.0.0.1
        "http://2130706433/v1",  # 127.0.0.1 written as a number
        "http://[::ffff:169.254.169.254]/v1",
        "http://224.0.0.1/v1",  # multicast
        "http://0.0.0.0/v1",
        "http://240.0.0.1/v1",  # reserved
        "http://user:pass@8.8.8.8/v1",
        "ftp://8.8.8.8/v1",
    ],
)
def test_private_and_odd_urls_are_refused_by_the_model_and_the_api(organizer_client, url):
    with pytest.raises(ValidationError):
        judge_config_create(name="ssrf", base_url=url, api_key_env=KEY_ENV)
    r = _api_judge(organizer_client, base_url=url)
    assert r.status_code == 400 and "base_url" in r.json(), r.content
    assert not JudgeConfig.objects.exists()


def test_public_addresses_pass_and_the_operator_can_list_private_ones(db, settings):
    judge_config_create(name="public", base_url="https://8.8.8.8/v1", api_key_env=KEY_ENV)
    settings.JUDGE_ALLOWED_HOSTS = ["10.0.0.0/8", "gpu-box.internal", ".lab.example"]
    judge_config_create(name="lan", base_url="http://10.1.2.3:8000/v1", api_key_env=KEY_ENV)
    judge_config_create(name="named", base_url="http://gpu-box.internal/v1", api_key_env=KEY_ENV)
    judge_config_create(name="suffix", base_url="http://a.lab.example/v1", api_key_env=KEY_ENV)
    with pytest.raises(ValidationError, match="JUDGE_ALLOWED_HOSTS"):
        judge_config_create(name="other", base_url="http://192.168.0.2/v1", api_key_env=KEY_ENV)
    # A strict allow-list: public hosts only when listed too.
    settings.JUDGE_ALLOW_PUBLIC_HOSTS = False
    with pytest.raises(ValidationError, match="not in JUDGE_ALLOWED_HOSTS"):
        judge_config_create(name="public2", base_url="https://8.8.4.4/v1", api_key_env=KEY_ENV)
    assert JudgeConfig.objects.count() == 4


def test_a_url_allowed_when_saved_but_refused_now_is_not_called_at_run_time(
    make_study, make_judge, fake, settings
):
    study = make_study(["Q?"], n_llms=1)
    run = judge_run_create(study=study, judge=make_judge(), repeat_rate=0)
    settings.JUDGE_ALLOWED_HOSTS = []  # the operator withdrew the local server
    result = execute_run(run.pk, backoff=0.01)
    assert result.status == "failed" and "127.0.0.1" in result.error
    assert fake.log == []


def test_a_name_that_does_not_resolve_is_kept_but_never_called(make_study, fake):
    judge = judge_config_create(
        name="nowhere", base_url="https://no-such-host.invalid/v1", api_key_env=KEY_ENV
    )
    run = judge_run_create(study=make_study(["Q?"], n_llms=1), judge=judge, repeat_rate=0)
    result = execute_run(run.pk, backoff=0.01)
    assert result.status == "failed" and "does not resolve" in result.error


def _in_a_thread(coro_fn):
    """Run a coroutine on its own loop in a helper thread (the browser tests may hold a loop in
    this one)."""
    result: dict = {}

    def target() -> None:
        try:
            result["value"] = asyncio.run(coro_fn())
        except Exception as e:
            result["error"] = e

    t = threading.Thread(target=target)
    t.start()
    t.join(30)
    if "error" in result:
        raise result["error"]
    return result["value"]


def test_the_runners_resolver_refuses_a_name_that_now_points_inside(fake, settings):
    """DNS rebinding: a listed name passes the checks, then resolves to a refused address when
    the client connects. The runner's HTTP session checks every address it resolves."""
    url = f"http://localhost:{fake.port}/v1/models"

    async def fetch() -> int:
        async with safety.guarded_session() as session, session.get(url) as r:
            return r.status

    settings.JUDGE_ALLOWED_HOSTS = ["localhost"]
    assert _in_a_thread(fetch) == 200
    settings.JUDGE_ALLOWED_HOSTS = []
    with pytest.raises(aiohttp.ClientConnectorError, match="JUDGE_ALLOWED_HOSTS"):
        _in_a_thread(fetch)


def test_redirects_are_not_followed(make_study, make_judge, fake):
    with Listener() as bouncer:
        bouncer.reply = (307, {}, {"Location": fake.base_url + "/chat/completions"})
        judge = make_judge(name="bouncer", base_url=bouncer.base_url, max_attempts=1)
        run = judge_run_create(study=make_study(["Q?"], n_llms=1), judge=judge, repeat_rate=0)
        result = execute_run(run.pk, backoff=0.01)
        assert len(bouncer.requests) == 1
    call = result.calls.get()
    assert call.status == "failed" and call.http_status == 307
    assert fake.log == []


def test_server_error_text_is_cut_short_and_never_echoes_the_key_or_headers(
    organizer_client, make_study, make_judge
):
    key = os.environ[KEY_ENV]
    echo = (
        f"bad request. You sent Authorization: Bearer {key} and x-api-key: {key}\x00 " + "x" * 5000
    )
    with Listener() as server:
        server.reply = (400, {"error": {"message": echo}}, {})
        judge = make_judge(name="echo", base_url=server.base_url, max_attempts=1)
        run = judge_run_create(study=make_study(["Q?"], n_llms=1), judge=judge, repeat_rate=0)
        result = execute_run(run.pk, backoff=0.01)
    call = result.calls.get()
    assert call.status == "failed" and call.error.startswith("HTTP 400: bad request.")
    assert len(call.error) <= 320 and key not in call.error and "\x00" not in call.error
    assert "Authorization: [redacted] and x-api-key: [redacted]" in call.error
    page = organizer_client.get(reverse("judges:run", args=[result.pk])).content.decode()
    api = organizer_client.get(reverse("judges_api:run_failures", args=[result.pk])).content
    assert key not in page and key.encode() not in api


def test_short_error_blanks_secrets_and_control_characters():
    text = safety.short_error("Authorization: Bearer abc.def token=1 cookie=s3cr3t\x00", secrets=())
    assert text == "Authorization: [redacted] token=1 cookie=[redacted]"
    assert (
        safety.short_error('{"api_key": "abc"} Bearer xyz')
        == '{"api_key": "[redacted]"} Bearer [redacted]'
    )

    assert safety.short_error("k" * 1000) == "k" * 299 + "…"
    assert (
        safety.short_error("my key is sk-123456", secrets=("sk-123456",)) == "my key is [redacted]"
    )


@pytest.mark.parametrize(
    "price", ["-0.01", "99999", "1000.000001", "NaN", "Infinity", "-Infinity", "1e400", "²", "\x00"]
)
def test_bad_prices_are_refused_by_the_model_form_and_api(organizer_client, price):
    r = _api_judge(organizer_client, price_in_per_1k=price)
    assert r.status_code == 400 and "price_in_per_1k" in r.json(), (price, r.content)
    r = organizer_client.post(
        reverse("judges:new"),
        {
            "name": "priced",
            "model": "m",
            "base_url": "http://127.0.0.1:9/v1",
            "api_key_env": KEY_ENV,
            "temperature": "0",
            "max_tokens": "10",
            "price_in_per_1k": "0.01",
            "price_out_per_1k": price,
            "json_mode": "auto",
            "concurrency": "1",
            "timeout_s": "5",
            "max_attempts": "1",
        },
    )
    assert r.status_code == 200 and 'id="id_price_out_per_1k"' in r.content.decode()
    if price not in ("²", "\x00"):
        with pytest.raises(ValidationError):
            judge_config_create(name="priced", api_key_env=KEY_ENV, price_in_per_1k=Decimal(price))
    assert not JudgeConfig.objects.exists()


def test_a_price_in_other_decimal_digits_is_refused_not_silently_converted(organizer_client):
    # Decimal() would read '٣' as 3: a number that spends money is typed in 0-9 or refused.
    r = _api_judge(organizer_client, price_in_per_1k="٣")
    assert r.status_code == 400 and "0-9" in str(r.json()["price_in_per_1k"])
    assert not JudgeConfig.objects.exists()


@pytest.mark.parametrize("field", ["temperature", "max_tokens", "max_attempts", "timeout_s"])
def test_every_kind_of_judge_number_in_other_digits_is_refused(organizer_client, field):
    # Float, integer and small-integer columns alike: the list of checked fields is read from
    # the model, so each kind of number column must be on it.
    r = _api_judge(organizer_client, **{field: "٣"})
    assert r.status_code == 400 and "0-9" in str(r.json()[field])
    assert not JudgeConfig.objects.exists()


def test_a_price_of_1000_per_1k_is_the_most_allowed_and_the_database_refuses_more(make_judge):
    judge = make_judge(price_in_per_1k=Decimal(1000), price_out_per_1k=Decimal(0))
    with pytest.raises(IntegrityError), transaction.atomic():
        JudgeConfig.objects.filter(pk=judge.pk).update(price_out_per_1k=Decimal(-1))
