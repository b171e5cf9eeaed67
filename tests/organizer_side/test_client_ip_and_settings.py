"""The client address behind proxies, and settings that refuse values they cannot read."""

from __future__ import annotations

import os

import pytest
from django.test import RequestFactory

from annotation.net import client_ip, limit_key
from config import settings as config_settings
from tests.settings_probe import probe_settings

# No test here touches a database (the two start-up checks read the settings in a process of their
# own and stop before any connection): the PostgreSQL pass would repeat the same runs.
pytestmark = pytest.mark.database_independent


def _request(remote: str, forwarded: str | None = None):
    extra = {"REMOTE_ADDR": remote}
    if forwarded is not None:
        extra["HTTP_X_FORWARDED_FOR"] = forwarded
    return RequestFactory().get("/", **extra)


def test_without_trusted_proxies_a_forged_forwarded_for_is_ignored(settings):
    settings.TRUSTED_PROXIES = []
    assert client_ip(_request("203.0.113.9", "1.2.3.4")) == "203.0.113.9"


def test_a_forwarded_for_from_an_untrusted_peer_is_ignored(settings):
    settings.TRUSTED_PROXIES = ["10.0.0.0/8"]
    assert client_ip(_request("203.0.113.9", "1.2.3.4")) == "203.0.113.9"


def test_through_a_trusted_proxy_the_client_is_the_address_the_proxy_saw(settings):
    settings.TRUSTED_PROXIES = ["127.0.0.1"]
    assert client_ip(_request("127.0.0.1", "198.51.100.7")) == "198.51.100.7"


def test_a_client_cannot_spoof_through_a_trusted_proxy_by_prepending_addresses(settings):
    # The proxy appends the peer it saw; anything to the left came from the client.
    settings.TRUSTED_PROXIES = ["127.0.0.1"]
    request = _request("127.0.0.1", "1.1.1.1, 9.9.9.9, 198.51.100.7")
    assert client_ip(request) == "198.51.100.7"


def test_a_chain_of_trusted_proxies_is_skipped_from_the_right(settings):
    settings.TRUSTED_PROXIES = ["127.0.0.1", "10.0.0.0/8"]
    request = _request("127.0.0.1", "6.6.6.6, 198.51.100.7, 10.1.2.3")
    assert client_ip(request) == "198.51.100.7"


def test_garbage_in_forwarded_for_falls_back_to_the_last_sure_hop(settings):
    settings.TRUSTED_PROXIES = ["127.0.0.1"]
    assert client_ip(_request("127.0.0.1", "not-an-ip\x00")) == "127.0.0.1"
    assert client_ip(_request("127.0.0.1", "")) == "127.0.0.1"
    assert client_ip(_request("127.0.0.1", " , ,")) == "127.0.0.1"


def test_ipv6_and_ipv4_mapped_peers(settings):
    settings.TRUSTED_PROXIES = ["::1", "127.0.0.1"]
    assert client_ip(_request("::1", "2001:db8::5")) == "2001:db8::5"
    assert client_ip(_request("::ffff:127.0.0.1", "198.51.100.7")) == "198.51.100.7"


def test_a_missing_remote_addr_is_an_empty_key_not_a_crash(settings):
    settings.TRUSTED_PROXIES = ["127.0.0.1"]
    request = RequestFactory().get("/")
    request.META.pop("REMOTE_ADDR", None)
    assert client_ip(request) == ""


@pytest.mark.parametrize("word", ["1", "true", "YES", " on "])
def test_envbool_reads_yes_words(monkeypatch, word):
    monkeypatch.setenv("LLMEVAL_TEST_FLAG", word)
    assert config_settings.envbool("LLMEVAL_TEST_FLAG", False) is True


@pytest.mark.parametrize("word", ["0", "false", "No", "off"])
def test_envbool_reads_no_words(monkeypatch, word):
    monkeypatch.setenv("LLMEVAL_TEST_FLAG", word)
    assert config_settings.envbool("LLMEVAL_TEST_FLAG", True) is False


@pytest.mark.parametrize("word", ["flase", "2", "tru", "y es", "真"])
def test_envbool_refuses_a_value_it_does_not_know(monkeypatch, word):
    monkeypatch.setenv("LLMEVAL_TEST_FLAG", word)
    with pytest.raises(config_settings.SettingError, match="LLMEVAL_TEST_FLAG"):
        config_settings.envbool("LLMEVAL_TEST_FLAG", False)


def test_envbool_unset_or_empty_is_the_default(monkeypatch):
    monkeypatch.delenv("LLMEVAL_TEST_FLAG", raising=False)
    assert config_settings.envbool("LLMEVAL_TEST_FLAG", True) is True
    monkeypatch.setenv("LLMEVAL_TEST_FLAG", "")
    assert config_settings.envbool("LLMEVAL_TEST_FLAG", False) is False


@pytest.mark.parametrize("value", ["ten", "²", "٣", "1_0", "1.5", "9" * 5000, "-"])
def test_envint_refuses_what_is_not_a_plain_whole_number(monkeypatch, value):
    monkeypatch.setenv("LLMEVAL_TEST_INT", value)
    with pytest.raises(config_settings.SettingError, match="LLMEVAL_TEST_INT"):
        config_settings.envint("LLMEVAL_TEST_INT", 3)


def test_envint_reads_numbers_and_checks_the_minimum(monkeypatch):
    monkeypatch.setenv("LLMEVAL_TEST_INT", " 42 ")
    assert config_settings.envint("LLMEVAL_TEST_INT", 3) == 42
    monkeypatch.setenv("LLMEVAL_TEST_INT", "-1")
    with pytest.raises(config_settings.SettingError, match="minimum"):
        config_settings.envint("LLMEVAL_TEST_INT", 3, minimum=0)


def test_envnetworks_refuses_a_bad_proxy_entry(monkeypatch):
    monkeypatch.setenv("LLMEVAL_TEST_NETS", "127.0.0.1, 10.0.0.0/8, ::1")
    assert config_settings.envnetworks("LLMEVAL_TEST_NETS") == ["127.0.0.1", "10.0.0.0/8", "::1"]
    monkeypatch.setenv("LLMEVAL_TEST_NETS", "127.0.0.1,proxy.local")
    with pytest.raises(config_settings.SettingError, match="proxy.local"):
        config_settings.envnetworks("LLMEVAL_TEST_NETS")


def test_envpairs_reads_name_value_pairs_and_refuses_anything_else(monkeypatch):
    monkeypatch.setenv("LLMEVAL_TEST_PAIRS", "A=api.openai.com, A=gw.example,B=x")
    assert config_settings.envpairs("LLMEVAL_TEST_PAIRS", "") == [
        ("A", "api.openai.com"), ("A", "gw.example"), ("B", "x")
    ]  # fmt: skip
    for bad in ("api.openai.com", "A=", "=host"):
        monkeypatch.setenv("LLMEVAL_TEST_PAIRS", bad)
        with pytest.raises(config_settings.SettingError, match="NAME=value"):
            config_settings.envpairs("LLMEVAL_TEST_PAIRS", "")


@pytest.fixture(scope="module")
def start_ups() -> dict[str, dict]:
    """The settings read at start-up with a bad value, both cases in one process
    (tests/settings_probe.py)."""
    environment = {k: v for k, v in os.environ.items() if k not in {"DEBUG", "TRUSTED_PROXIES"}}
    cases = {"debug typo": {"DEBUG": "flase"}, "bad proxy": {"TRUSTED_PROXIES": "10.0.0.0/33"}}
    return probe_settings({name: {**environment, **env} for name, env in cases.items()})


def test_the_server_refuses_to_start_with_a_debug_typo(start_ups):
    result = start_ups["debug typo"]
    assert result["error"] == "SettingError"
    assert "DEBUG='flase' is not a yes/no value" in result["message"]


def test_the_server_refuses_to_start_with_a_bad_trusted_proxy(start_ups):
    result = start_ups["bad proxy"]
    assert result["error"] == "SettingError"
    assert "TRUSTED_PROXIES" in result["message"]


def test_drf_throttles_do_not_believe_a_forged_forwarded_for(settings):
    from rest_framework.throttling import AnonRateThrottle

    from config.drf import ClientIpThrottleMixin

    class Throttle(ClientIpThrottleMixin, AnonRateThrottle):
        pass

    settings.TRUSTED_PROXIES = []
    request = _request("203.0.113.9", "1.2.3.4")
    assert AnonRateThrottle().get_ident(request) == "203.0.113.9"
    assert Throttle().get_ident(request) == "203.0.113.9"
    settings.TRUSTED_PROXIES = ["203.0.113.0/24"]
    assert Throttle().get_ident(request) == "1.2.3.4"


def test_limits_count_an_ipv6_client_by_its_64_and_ipv4_by_its_address(settings):
    settings.TRUSTED_PROXIES = []
    one = limit_key(_request("2001:db8:1:2::1"))
    assert one == limit_key(_request("2001:db8:1:2:ffff:ffff:ffff:fffe")) == "2001:db8:1:2::/64"
    assert limit_key(_request("2001:db8:1:3::1")) != one
    assert limit_key(_request("::ffff:198.51.100.7")) == "198.51.100.7"
    assert limit_key(_request("198.51.100.7")) != limit_key(_request("198.51.100.8"))
    settings.TRUSTED_PROXIES = ["::1"]
    assert limit_key(_request("::1", "2001:db8:9:9::5")) == "2001:db8:9:9::/64"
