"""JUDGE_ALLOWED_HOSTS can name a port, so allowing a local model server does not open every
service on the machine to judges.

Before, an entry was a host, a name suffix, an address or a network, and `127.0.0.1:8000` was
taken for a host name nobody has: to let judges call a vLLM on 127.0.0.1:8000 the operator had
to allow all of 127.0.0.1, so any organizer could point a judge at the machine's Redis,
PostgreSQL or admin ports and read 300 characters of their answers on the run page (or tell
open ports from closed ones). Now `host:port` and `[v6]:port` entries allow that port only."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from evaluation import safety
from evaluation.models import JudgeConfig
from evaluation.services import judge_config_create

from .conftest import KEY_ENV
from .test_judge_safety import _in_a_thread

pytestmark = pytest.mark.django_db


def test_an_address_with_a_port_allows_that_port_only(settings):
    settings.JUDGE_ALLOWED_HOSTS = ["127.0.0.1:8000"]
    judge_config_create(name="vllm", base_url="http://127.0.0.1:8000/v1", api_key_env=KEY_ENV)
    for url in ("http://127.0.0.1:6379/v1", "http://127.0.0.1/v1", "https://127.0.0.1/v1"):
        with pytest.raises(ValidationError, match="JUDGE_ALLOWED_HOSTS"):
            judge_config_create(name=f"other {url}", base_url=url, api_key_env=KEY_ENV)
    assert list(JudgeConfig.objects.values_list("name", flat=True)) == ["vllm"]


def test_a_network_or_an_ipv6_address_with_a_port(settings):
    settings.JUDGE_ALLOWED_HOSTS = ["10.0.0.0/8:8000", "[::1]:8000", "::2"]
    safety.check_base_url("http://10.1.2.3:8000/v1")
    safety.check_base_url("http://[::1]:8000/v1")
    safety.check_base_url("http://[::2]:1234/v1")  # an IPv6 address without a port: any port
    for url in ("http://10.1.2.3:8001/v1", "http://[::1]:8001/v1", "http://[::1]/v1"):
        with pytest.raises(ValidationError, match="JUDGE_ALLOWED_HOSTS"):
            safety.check_base_url(url)


def test_a_name_with_a_port(settings):
    settings.JUDGE_ALLOWED_HOSTS = ["gpu-box.invalid:8000", ".lab.invalid:9000"]
    safety.check_base_url("http://gpu-box.invalid:8000/v1")
    safety.check_base_url("http://a.lab.invalid:9000/v1")
    for url in ("http://gpu-box.invalid:8001/v1", "http://a.lab.invalid/v1"):
        with pytest.raises(ValidationError, match="does not resolve"):
            safety.check_base_url(url)  # not listed on that port, so looked up (and unknown)


def test_the_runners_resolver_holds_a_listed_name_to_its_port(fake, settings):
    url = f"http://localhost:{fake.port}/v1/models"

    async def fetch() -> int:
        async with safety.guarded_session() as session, session.get(url) as r:
            return r.status

    settings.JUDGE_ALLOWED_HOSTS = [f"localhost:{fake.port}"]
    assert _in_a_thread(fetch) == 200
    settings.JUDGE_ALLOWED_HOSTS = [f"localhost:{fake.port + 1}"]
    with pytest.raises(Exception, match="JUDGE_ALLOWED_HOSTS"):
        _in_a_thread(fetch)
