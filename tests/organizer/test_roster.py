"""Onsite annotators: bulk creation (generated passwords shown once, or invitations), re-issued
invitations (the old link stops working), deactivation; usernames never beside pseudonyms."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.urls import reverse

from annotation import engine
from annotation.models import Rater
from tests.engine.conftest import make_study


@pytest.fixture(autouse=True)
def _english():
    from django.utils import translation

    with translation.override("en"):
        yield


def bulk(client, names: str, access: str = "password"):
    return client.post(reverse("organize:annotators_bulk"), {"names": names, "access": access})


def test_bulk_creates_accounts_with_generated_passwords_shown_once(
    organizer_client, organizer, client
):
    response = bulk(organizer_client, "ann-a\n\n  ann-b  \nzhang.wei@example.org\n")
    html = response.content.decode()
    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    passwords = re.findall(r"<code data-password>([^<]+)</code>", html)
    assert len(passwords) == 3 and len(set(passwords)) == 3
    users = {u.username: u for u in User.objects.filter(rater__invited_by=organizer)}
    assert set(users) == {"ann-a", "ann-b", "zhang.wei@example.org"}
    assert users["zhang.wei@example.org"].email == "zhang.wei@example.org"
    # The password on the page is the account's, and it is stored only as a hash.
    assert users["ann-a"].check_password(passwords[0])
    assert passwords[0] not in users["ann-a"].password
    # Shown once: the roster page afterwards lists the accounts, not the passwords.
    later = organizer_client.get(reverse("organize:annotators")).content.decode()
    assert "ann-a" in later and passwords[0] not in later
    assert client.login(username="ann-b", password=passwords[1])


def test_bulk_can_send_invitations_instead(organizer_client):
    html = bulk(organizer_client, "inv-1\ninv-2", access="invite").content.decode()
    links = re.findall(r'value="(http[^"]*/invite/[^"]+)" data-invite-url', html)
    assert len(links) == 2
    assert not User.objects.get(username="inv-1").has_usable_password()


@pytest.mark.parametrize(
    ("names", "message"),
    [
        ("good-one\nbad name with spaces", "line 2: &#x27;bad name with spaces&#x27; is neither"),
        ("dup\nDUP", "line 2: &#x27;DUP&#x27; repeats line 1"),
        ("alice", "the username &#x27;alice&#x27; is taken"),
        ("nul\x00byte", "Null characters are not allowed"),
        ("x" * 151, "is not a usable username"),
        ("\n \n", "This field is required"),
    ],
)
def test_bulk_refuses_bad_lines_naming_them_and_writes_nothing(
    organizer_client, organizer, names, message
):
    before = User.objects.count()
    response = bulk(organizer_client, names)
    assert response.status_code == 200
    assert message in response.content.decode()
    assert User.objects.count() == before


def test_bulk_refuses_more_than_500_names(organizer_client):
    response = bulk(organizer_client, "\n".join(f"n{i}" for i in range(501)))
    assert "add at most 500 at a time" in response.content.decode()
    assert not User.objects.filter(username="n0").exists()


def test_a_huge_paste_is_refused_before_any_name_is_looked_up(
    organizer, django_assert_max_num_queries
):
    # Each line was looked up in the accounts before the count was checked: a paste of the
    # request's 2.5 MB made a quarter of a million queries.
    from annotation.roster import roster_parse

    with django_assert_max_num_queries(0), pytest.raises(ValidationError, match="at most 500"):
        roster_parse("\n".join(f"n{i}" for i in range(20_000)))


def test_bulk_refusals_speak_chinese(organizer_client):
    organizer_client.cookies["django_language"] = "zh-hans"
    response = organizer_client.post(
        reverse("organize:annotators_bulk"),
        {"names": "dup\nDUP\nbad name", "access": "password"},
        HTTP_ACCEPT_LANGUAGE="zh-hans",
    )
    text = response.content.decode()
    assert "repeats line" not in text and "neither a username" not in text
    assert "重复" in text


def test_a_reissued_invitation_replaces_the_old_link(organizer_client, client):
    html = bulk(organizer_client, "late", access="invite").content.decode()
    old = re.search(r'value="(http[^"]*/invite/[^"]+)"', html).group(1)
    rater = Rater.objects.get(user__username="late")
    html = organizer_client.post(
        reverse("organize:annotator_invite", args=[rater.pk])
    ).content.decode()
    new = re.search(r'value="(http[^"]*/invite/[^"]+)"', html).group(1)
    assert new != old
    assert client.get(old).status_code == 404  # "Invitation not valid"
    assert client.get(new).status_code == 200


def test_reissuing_also_ends_a_known_password(organizer_client, client):
    html = bulk(organizer_client, "forgetful").content.decode()
    password = re.search(r"<code data-password>([^<]+)</code>", html).group(1)
    rater = Rater.objects.get(user__username="forgetful")
    organizer_client.post(reverse("organize:annotator_invite", args=[rater.pk]))
    assert not client.login(username="forgetful", password=password)


def test_a_deactivated_annotator_cannot_sign_in_and_can_be_reactivated(organizer_client, client):
    html = bulk(organizer_client, "leaver").content.decode()
    password = re.search(r"<code data-password>([^<]+)</code>", html).group(1)
    rater = Rater.objects.get(user__username="leaver")
    url = reverse("organize:annotator_active", args=[rater.pk])
    organizer_client.post(url, {"active": "0"})
    rater.user.refresh_from_db()
    assert not rater.user.is_active
    assert not client.login(username="leaver", password=password)
    assert "deactivated" in organizer_client.get(reverse("organize:annotators")).content.decode()
    organizer_client.post(url, {"active": "1"})
    assert client.login(username="leaver", password=password)


def test_a_signed_in_annotator_is_signed_out_when_deactivated(organizer_client, organizer):
    from django.test import Client

    study = make_study(owner=organizer)
    bulk(organizer_client, "busy")
    rater = Rater.objects.get(user__username="busy")
    client = Client()
    client.force_login(rater.user)
    start = reverse("annotate:next", args=[study.public_id])
    served = client.get(start)
    assert "/accounts/login/" not in served.get("Location", "")
    organizer_client.post(reverse("organize:annotator_active", args=[rater.pk]), {"active": "0"})
    response = client.get(start)
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_another_organizer_cannot_touch_alices_annotators(client, organizer, other_organizer):
    client.force_login(organizer)
    bulk(client, "alices")
    rater = Rater.objects.get(user__username="alices")
    password_before = rater.user.password
    client.force_login(other_organizer)
    assert client.post(reverse("organize:annotator_invite", args=[rater.pk])).status_code == 404
    url = reverse("organize:annotator_active", args=[rater.pk])
    assert client.post(url, {"active": "0"}).status_code == 404
    rater.user.refresh_from_db()
    assert rater.user.is_active and rater.user.password == password_before


def test_annotators_cannot_use_the_roster_actions(annotator_client, annotator_user):
    rater = annotator_user.rater
    assert annotator_client.post(reverse("organize:annotators_bulk"), {}).status_code == 403
    url = reverse("organize:annotator_invite", args=[rater.pk])
    assert annotator_client.post(url).status_code == 403


def test_the_roster_never_shows_a_pseudonym_next_to_a_username(organizer_client, organizer):
    study = make_study(owner=organizer)
    bulk(organizer_client, "shy")
    rater = Rater.objects.get(user__username="shy")
    engine.assignment_next(study=study, rater=rater)
    roster = organizer_client.get(reverse("organize:annotators")).content.decode()
    assert "shy" in roster and rater.pseudonym not in roster
    page = organizer_client.get(reverse("organize:study", args=[study.pk])).content.decode()
    assert rater.pseudonym in page and "shy" not in page


def test_the_annotator_api_lists_accounts_without_pseudonyms(client, organizer):
    from rest_framework.authtoken.models import Token

    token, _ = Token.objects.get_or_create(user=organizer)
    client.defaults["HTTP_AUTHORIZATION"] = f"Token {token.key}"
    client.post("/api/annotators/", {"username": "api-shy"}, content_type="application/json")
    rater = Rater.objects.get(user__username="api-shy")
    listed = client.get("/api/annotators/").json()
    assert listed == [
        {
            "id": rater.pk,
            "username": "api-shy",
            "active": True,
            "created_at": listed[0]["created_at"],
        }
    ]
    assert rater.pseudonym not in str(listed)


@pytest.mark.parametrize("promotion", ["organizers group", "staff", "superuser"])
def test_an_annotator_promoted_to_organizer_is_no_longer_the_inviters_to_reset(
    organizer_client, promotion
):
    """Alice created eve's account; a superuser later made eve an organizer (or staff, or a
    superuser). A new invitation would hand Alice a link that signs in as eve, and Alice could
    lock eve out: both are refused (403) and eve's account is unchanged."""
    from django.contrib.auth.models import Group

    from annotation.permissions import ORGANIZERS_GROUP

    bulk(organizer_client, "eve")
    rater = Rater.objects.get(user__username="eve")
    eve = rater.user
    if promotion == "organizers group":
        eve.groups.add(Group.objects.get_or_create(name=ORGANIZERS_GROUP)[0])
    else:
        User.objects.filter(pk=eve.pk).update(**{f"is_{promotion}": True})
    password_before = User.objects.get(pk=eve.pk).password
    invite = organizer_client.post(reverse("organize:annotator_invite", args=[rater.pk]))
    assert invite.status_code == 403
    assert not re.search(r"/invite/[\w-]+/[\w-]+/", invite.content.decode())
    active = reverse("organize:annotator_active", args=[rater.pk])
    assert organizer_client.post(active, {"active": "0"}).status_code == 403
    eve = User.objects.get(pk=eve.pk)
    assert eve.is_active and eve.password == password_before
