"""Guessing passwords: failed sign-ins per client address and hour are capped on the login page
and the admin's sign-in; past the cap the password is not even checked (config/login.py)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

LOGIN = "/accounts/login/"
ADMIN_LOGIN = "/admin/login/"


@pytest.fixture
def staff(db) -> User:
    return User.objects.create_superuser("root", password="the-right-password")


def _guess(client: Client, url: str, password: str):
    return client.post(url, {"username": "root", "password": password})


@pytest.mark.parametrize("url", [LOGIN, ADMIN_LOGIN])
def test_failed_sign_ins_from_one_address_are_capped(staff, settings, url):
    settings.LOGIN_FAILURES_PER_HOUR = 3
    guesser = Client(REMOTE_ADDR="203.0.113.66")
    assert [_guess(guesser, url, f"guess-{i}").status_code for i in range(3)] == [200] * 3
    refused = _guess(guesser, url, "the-right-password")  # the right one, too late
    assert refused.status_code == (429 if url == LOGIN else 200)
    assert b"Too many failed sign-ins from your address" in refused.content
    assert "_auth_user_id" not in guesser.session
    # Another address signs in as usual.
    other = Client(REMOTE_ADDR="192.0.2.10")
    assert _guess(other, url, "the-right-password").status_code == 302
    assert other.session["_auth_user_id"] == str(staff.pk)


def test_a_cap_of_zero_turns_it_off(staff, settings):
    settings.LOGIN_FAILURES_PER_HOUR = 0
    guesser = Client(REMOTE_ADDR="203.0.113.67")
    for i in range(5):
        _guess(guesser, LOGIN, f"guess-{i}")
    assert _guess(guesser, LOGIN, "the-right-password").status_code == 302


def test_the_refusal_speaks_chinese(staff, settings):
    settings.LOGIN_FAILURES_PER_HOUR = 1
    guesser = Client(REMOTE_ADDR="203.0.113.68", HTTP_ACCEPT_LANGUAGE="zh-hans")
    _guess(guesser, LOGIN, "wrong")
    refused = _guess(guesser, LOGIN, "wrong again")
    assert refused.status_code == 429
    assert "登录失败次数过多" in refused.content.decode()


@pytest.mark.parametrize("url", [LOGIN, ADMIN_LOGIN])
def test_a_forged_forwarded_for_buys_no_new_budget(staff, settings, url):
    """X-Forwarded-For is any client's to write: without TRUSTED_PROXIES it is ignored, and
    behind a listed proxy only the address the proxy appended counts (annotation/net.py)."""
    settings.LOGIN_FAILURES_PER_HOUR = 2
    direct = Client(REMOTE_ADDR="203.0.113.70")
    for i in range(2):
        direct.post(
            url, {"username": "root", "password": f"g{i}"}, HTTP_X_FORWARDED_FOR=f"10.9.0.{i}"
        )
    forged = direct.post(
        url,
        {"username": "root", "password": "the-right-password"},
        HTTP_X_FORWARDED_FOR="10.9.0.99",
    )
    assert b"Too many failed sign-ins" in forged.content and "_auth_user_id" not in direct.session

    settings.TRUSTED_PROXIES = ["127.0.0.1"]
    proxied = Client(REMOTE_ADDR="127.0.0.1")
    for i in range(2):  # the client writes a new left-hand address each time; the proxy appends
        proxied.post(
            url,
            {"username": "root", "password": f"h{i}"},
            HTTP_X_FORWARDED_FOR=f"10.8.0.{i}, 198.51.100.7",
        )
    refused = proxied.post(
        url,
        {"username": "root", "password": "the-right-password"},
        HTTP_X_FORWARDED_FOR="10.8.0.99, 198.51.100.7",
    )
    assert b"Too many failed sign-ins" in refused.content
    # Another client behind the same proxy is not locked out by this one.
    other = proxied.post(
        url,
        {"username": "root", "password": "the-right-password"},
        HTTP_X_FORWARDED_FOR="198.51.100.8",
    )
    assert other.status_code == 302


def test_the_hour_slides_so_the_turn_of_the_clock_buys_no_second_cap(staff, settings, monkeypatch):
    """A whole cap spent just before the hour turns still counts just after it: the failures of
    the hour before fade out over the next hour instead of vanishing at its top."""
    import config.login as login

    settings.LOGIN_FAILURES_PER_HOUR = 4
    guesser = Client(REMOTE_ADDR="203.0.113.80")
    now = [1_800_000_000 - 30.0]  # 30 s before a clock hour ends
    monkeypatch.setattr(login.time, "time", lambda: now[0])
    assert [_guess(guesser, LOGIN, f"g{i}").status_code for i in range(4)] == [200] * 4
    now[0] += 60  # 30 s into the next clock hour
    refused = _guess(guesser, LOGIN, "the-right-password")
    assert refused.status_code == 429 and "_auth_user_id" not in guesser.session
    # The four failures fade out over that hour: a quarter of it later one of them has gone.
    now[0] += 15 * 60
    assert _guess(guesser, LOGIN, "the-right-password").status_code == 302


@pytest.mark.parametrize(
    ("current", "previous", "gone", "minutes"),
    [
        (0, 4, 0.5, 0),  # 0 + 4 x 0.5 = 2: one more failure keeps it within 4
        (3, 0, 0.9, 0),  # this hour's 3: the fourth is allowed
        (0, 4, 0.0, 15),  # 4 x (1 - t) <= 3 once a quarter of the hour has gone
        (2, 4, 0.25, 30),  # 2 + 4 x (0.75 - t) <= 3 once t = 0.5 h
        (4, 0, 0.5, 45),  # this hour's 4: its end, then 4 x (1 - t) <= 3 after 15 min
        (8, 0, 0.5, 68),  # this hour's 8: its end, then 8 x (1 - t) <= 3 after 37.5 min
    ],
)
def test_the_wait_is_until_one_more_failure_fits_the_sliding_count(
    current, previous, gone, minutes
):
    from config.login import wait_minutes

    assert wait_minutes(current, previous, gone, 4) == minutes
