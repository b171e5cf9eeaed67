"""Onsite annotator accounts an organizer manages: create one or many (generated passwords shown
once, or invitation links), re-issue an invitation (the old link stops working), deactivate and
reactivate. Shared by the organizer pages and the API."""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.contrib.auth.tokens import default_token_generator
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.validators import validate_email
from django.db import transaction
from django.db.models import QuerySet
from django.urls import reverse
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode
from django.utils.translation import gettext as _

from annotation.models import Rater
from annotation.permissions import ORGANIZERS_GROUP

MAX_BULK = 500
USERNAME_MAX = 150


def onsite_annotators_for(user) -> QuerySet[Rater]:
    """The onsite accounts an organizer created (superusers: all)."""
    qs = Rater.objects.filter(pool=Rater.Pool.ONSITE).select_related("user")
    return qs if user.is_superuser else qs.filter(invited_by=user)


def _invite_path(user: User) -> str:
    uid = urlsafe_base64_encode(force_bytes(user.pk))
    return reverse("annotate:invite", args=[uid, default_token_generator.make_token(user)])


@transaction.atomic
def onsite_annotator_create(
    *, username: str, password: str, invited_by, email: str = ""
) -> tuple[Rater, str]:
    """An account for an onsite annotator. Without a password the account gets an unusable one
    and the invitation path (uid/token) to set it is returned."""
    user = get_user_model().objects.create_user(
        username=username, email=email, password=password or None
    )
    rater = Rater.objects.create(
        kind=Rater.Kind.HUMAN, pool=Rater.Pool.ONSITE, user=user, invited_by=invited_by
    )
    return rater, "" if password else _invite_path(user)


@dataclass(frozen=True)
class RosterLine:
    number: int
    username: str
    email: str


def roster_parse(text: str) -> list[RosterLine]:
    """One username or e-mail address a line (blank lines ignored). An address becomes the
    username too. Raises ValidationError listing every bad line by number and value; a paste of
    more than MAX_BULK names is refused before any line is looked up."""
    entries = [(n, raw.strip()) for n, raw in enumerate(text.splitlines(), start=1) if raw.strip()]
    if len(entries) > MAX_BULK:
        raise ValidationError(
            _("%(n)d names: add at most %(max)d at a time.") % {"n": len(entries), "max": MAX_BULK}
        )
    if not entries:
        raise ValidationError(_("Paste at least one username or e-mail address."))
    errors: list[str] = []
    lines: list[RosterLine] = []
    seen: dict[str, int] = {}
    for number, value in entries:
        error = _line_error(value, seen.get(value.casefold()))
        seen.setdefault(value.casefold(), number)
        if error is not None:
            errors.append(_("line %(n)d: %(error)s") % {"n": number, "error": error})
        else:
            lines.append(RosterLine(number, value, value if "@" in value else ""))
    if errors:
        raise ValidationError(errors)
    return lines


def _line_error(value: str, repeats: int | None) -> str | None:
    """Why one pasted name cannot be an account, or None."""
    shown = repr(value[:60])
    if "\x00" in value or len(value) > USERNAME_MAX:
        return _("%(value)s is not a usable username") % {"value": shown}
    try:
        if "@" in value:
            validate_email(value)
        UnicodeUsernameValidator()(value)
    except ValidationError:
        return _("%(value)s is neither a username nor an e-mail address") % {"value": shown}
    if repeats is not None:
        return _("%(value)s repeats line %(line)d") % {"value": shown, "line": repeats}
    if get_user_model().objects.filter(username__iexact=value).exists():
        return _("the username %(value)s is taken") % {"value": shown}
    return None


@dataclass(frozen=True)
class NewAccount:
    rater: Rater
    username: str
    password: str  # generated; shown once and never stored in clear
    invite_path: str


@transaction.atomic
def onsite_annotators_bulk_create(*, text: str, invited_by, invite: bool) -> list[NewAccount]:
    """Accounts for every pasted line, all or none: generated passwords (``invite=False``) or
    invitation links the annotators use to choose their own."""
    made = []
    for line in roster_parse(text):
        password = "" if invite else secrets.token_urlsafe(9)
        rater, path = onsite_annotator_create(
            username=line.username, password=password, invited_by=invited_by, email=line.email
        )
        made.append(NewAccount(rater, line.username, password, path))
    return made


def _own_account(rater: Rater, by) -> User:
    """The onsite rater's account, if `by` may manage it."""
    if rater.pool != Rater.Pool.ONSITE or rater.user is None:
        raise ValidationError(_("Only onsite accounts are managed here."))
    if not (by.is_superuser or rater.invited_by_id == by.id):
        raise PermissionDenied(_("This annotator belongs to another organizer."))
    user = rater.user
    if not by.is_superuser and _has_organizer_rights(user):
        # Promoted since the organizer made it: a new invitation would hand them a link that
        # signs in with those rights, and deactivating would lock a colleague out.
        raise PermissionDenied(
            "This account has organizer rights now; only a superuser manages it."
        )
    return user


def _has_organizer_rights(user: User) -> bool:
    """Superuser, staff or organizer, whether or not the account is active now."""
    if user.is_superuser or user.is_staff:
        return True
    return user.groups.filter(name=ORGANIZERS_GROUP).exists()


@transaction.atomic
def invite_reissue(*, rater: Rater, by) -> str:
    """A fresh invitation link for an onsite account. The account's password is replaced by an
    unusable one, which invalidates every earlier link (the token hashes the password) and any
    password the annotator had: they choose a new one through the new link."""
    user = _own_account(rater, by)
    user.set_unusable_password()
    user.save(update_fields=["password"])
    return _invite_path(user)


@transaction.atomic
def onsite_annotator_set_active(*, rater: Rater, active: bool, by) -> Rater:
    """Deactivate (the account can no longer log in; its session ends at its next request) or
    reactivate an onsite account. Ratings already given stay in the data."""
    user = _own_account(rater, by)
    user.is_active = active
    user.save(update_fields=["is_active"])
    return rater
