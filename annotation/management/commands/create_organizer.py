"""python manage.py create_organizer USERNAME [--email E] [--promote] [--no-input]"""

from __future__ import annotations

import getpass
import os

from django.contrib.auth import get_user_model, password_validation
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from annotation.permissions import ORGANIZERS_GROUP

PASSWORD_ENV = "ORGANIZER_PASSWORD"


class Command(BaseCommand):
    help = (
        "Make an organizer account: a user in the 'organizers' group, who sees and runs only "
        "their own studies (no staff status, no admin). The password is asked twice, or read "
        f"from the {PASSWORD_ENV} environment variable (with --no-input); it must pass the "
        "site's password rules. --promote adds an existing account to the organizers group "
        "instead (its password is left as it is)."
    )

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--email", default="", help="The account's e-mail address.")
        parser.add_argument(
            "--promote",
            action="store_true",
            help="The account exists: add it to the organizers group, change nothing else.",
        )
        parser.add_argument(
            "--no-input",
            action="store_true",
            help=f"Never prompt: the password comes from {PASSWORD_ENV}.",
        )

    def handle(self, *args, **opts):
        User = get_user_model()
        username = opts["username"].strip()
        if not username or "\x00" in username or len(username) > 150:
            raise CommandError("Give a user name of 1 to 150 characters.")
        user = User.objects.filter(username=username).first()
        if user is not None and not opts["promote"]:
            raise CommandError(
                f"A user {username!r} exists already: --promote adds it to the organizers group."
            )
        if user is None and opts["promote"]:
            raise CommandError(f"No user {username!r} to promote.")
        with transaction.atomic():
            if user is None:
                user = User(username=username, email=opts["email"], is_active=True)
                user.set_password(self._password(user, opts["no_input"]))
                user.save()
                made = "created"
            else:
                made = "promoted"
            group, _ = Group.objects.get_or_create(name=ORGANIZERS_GROUP)
            user.groups.add(group)
        self.stdout.write(f"organizer {username!r} {made}: sign in at /accounts/login/")

    def _password(self, user, no_input: bool) -> str:
        if no_input or PASSWORD_ENV in os.environ:
            password = os.environ.get(PASSWORD_ENV, "")
            if not password:
                raise CommandError(f"Set {PASSWORD_ENV} (--no-input reads the password there).")
        else:
            password = getpass.getpass("Password: ")
            if password != getpass.getpass("Password (again): "):
                raise CommandError("The two passwords differ.")
        if "\x00" in password:
            raise CommandError("The password holds a NUL character.")
        try:
            password_validation.validate_password(password, user)
        except ValidationError as e:
            raise CommandError(" ".join(e.messages)) from None
        return password
