"""`manage.py create_organizer`: the first organizer account of a new database, without the
admin; the account then runs its own studies in the browser and sees nobody else's."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from annotation.permissions import is_organizer

pytestmark = pytest.mark.django_db
GOOD = "a-long enough passphrase 7"


def test_creates_an_organizer_who_can_sign_in_and_reach_the_organizer_pages(client, monkeypatch):
    monkeypatch.setenv("ORGANIZER_PASSWORD", GOOD)
    call_command("create_organizer", "lab-lead", "--email", "lead@example.org", "--no-input")
    user = get_user_model().objects.get(username="lab-lead")
    assert is_organizer(user) and not user.is_staff and not user.is_superuser
    assert user.email == "lead@example.org" and user.check_password(GOOD)
    assert client.login(username="lab-lead", password=GOOD)
    assert client.get("/organize/studies/").status_code == 200
    assert client.get("/admin/").status_code == 302  # no admin for a plain organizer


@pytest.mark.parametrize("password", ["", "short", "1234567"])  # the site's minimum length: 8
def test_refuses_a_weak_or_missing_password_and_writes_nothing(monkeypatch, password):
    monkeypatch.setenv("ORGANIZER_PASSWORD", password)
    with pytest.raises(CommandError):
        call_command("create_organizer", "lab-lead", "--no-input")
    assert not get_user_model().objects.filter(username="lab-lead").exists()


def test_an_existing_account_is_promoted_only_when_asked(monkeypatch):
    user = get_user_model().objects.create_user("ann", password="kept as it was 99")
    monkeypatch.setenv("ORGANIZER_PASSWORD", GOOD)
    with pytest.raises(CommandError, match="--promote"):
        call_command("create_organizer", "ann", "--no-input")
    assert not is_organizer(user)
    call_command("create_organizer", "ann", "--promote", "--no-input")
    user.refresh_from_db()
    assert is_organizer(user) and user.check_password("kept as it was 99")
    with pytest.raises(CommandError, match="No user"):
        call_command("create_organizer", "nobody", "--promote")


@pytest.mark.parametrize("name", ["", "   ", "x\x00y", "x" * 151])
def test_refuses_a_bad_user_name(monkeypatch, name):
    monkeypatch.setenv("ORGANIZER_PASSWORD", GOOD)
    with pytest.raises(CommandError):
        call_command("create_organizer", name, "--no-input")
    assert get_user_model().objects.count() == 0
