"""Who may do what. Organizers are staff users or members of the "organizers" group. They see
only the studies they own, and only the datasets `datasets_visible` lists: their own, the shared
catalogue (datasets with no owner: loaded from the command line, the demo, the published data)
and those their studies use; likewise the rubrics `rubrics_visible` lists (the built-in ones,
their own, those their studies use). Superusers see all. Every page, API view, form and admin page that
lists or fetches a study, dataset, question, response or LLM goes through these functions
(docs/decisions/data.md, "Who sees which data")."""

from __future__ import annotations

from functools import wraps

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from django_htmx.http import HttpResponseClientRedirect
from rest_framework.permissions import BasePermission

ORGANIZERS_GROUP = "organizers"


def is_organizer(user) -> bool:
    if not getattr(user, "is_authenticated", False) or not user.is_active:
        return False
    if user.is_superuser or user.is_staff:
        return True
    return user.groups.filter(name=ORGANIZERS_GROUP).exists()


def organizer_required(view):
    """Function-view decorator: anonymous users go to the login page, others get 403."""

    @wraps(view)
    def wrapper(request, *args, **kwargs):
        if not request.user.is_authenticated:
            return _to_login(request)
        if not is_organizer(request.user):
            raise PermissionDenied
        return view(request, *args, **kwargs)

    return wrapper


def _to_login(request) -> HttpResponse:
    """The login page, back to where the user was. An htmx request (a session that expired on
    an open page: its filters, its charts) gets a client-side redirect back to the page itself:
    htmx would follow a 302 and put the login page in the fragment's place, or, for the charts'
    out-of-band swaps, drop it and leave the page waiting."""
    htmx = getattr(request, "htmx", None)
    if htmx:
        page = htmx.current_url_abs_path or request.get_full_path()
        return HttpResponseClientRedirect(redirect_to_login(page).url)
    return redirect_to_login(request.get_full_path())


def studies_for(user):
    from annotation.models import Study

    qs = Study.objects.all()
    return qs if user.is_superuser else qs.filter(owner=user)


def _own_shared_or_used(user, qs: QuerySet, shared: Q, study_column: str) -> QuerySet:
    """The rows of `qs` that `user` may read: their own, the `shared` ones and those one of their
    studies uses (through `study_column`); superusers all."""
    from annotation.models import Study

    if user.is_superuser:
        return qs
    used = Study.objects.filter(owner=user).values(study_column)
    return qs.filter(Q(owner=user) | shared | Q(pk__in=used))


def datasets_visible(user) -> QuerySet:
    """The datasets `user` may read: their own, the shared catalogue (no owner) and those their
    studies use; superusers all. Another organizer's dataset is not listed, and fetching it is
    a 404 like a missing one."""
    from annotation.models import Dataset

    return _own_shared_or_used(user, Dataset.objects.all(), Q(owner__isnull=True), "dataset_id")


def datasets_owned(user) -> QuerySet:
    """The datasets `user` may change: their own (superusers: all)."""
    from annotation.models import Dataset

    qs = Dataset.objects.all()
    return qs if user.is_superuser else qs.filter(owner=user)


def rubrics_visible(user) -> QuerySet:
    """The rubrics `user` may read and pick: the built-in ones, their own and those their studies
    use; superusers all. Another organizer's rubric is not listed, and naming it is answered as
    a missing one (404, "does not exist"). Custom rubrics without an owner (made before rubrics
    had one, or whose owner's account is gone) are the superusers' only."""
    from annotation.models import Rubric

    return _own_shared_or_used(user, Rubric.objects.all(), Q(builtin=True), "rubric_id")


def rubrics_owned(user) -> QuerySet:
    """The rubrics `user` may edit or delete (when no study uses them): their own custom ones;
    superusers every custom one. Built-in rubrics: nobody."""
    from annotation.models import Rubric

    qs = Rubric.objects.filter(builtin=False)
    return qs if user.is_superuser else qs.filter(owner=user)


def may_write_dataset(user, dataset) -> bool:
    """May an import by `user` (None: the command line) add questions or answers to `dataset`?
    The command line, superusers and the dataset's owner may; nobody else, not even into the
    shared catalogue, which every organizer reads."""
    if user is None or user.is_superuser:
        return True
    return dataset.owner_id is not None and dataset.owner_id == user.pk


def llms_visible(user) -> QuerySet:
    """The LLMs with at least one answer in a dataset `user` may read (superusers: all)."""
    from annotation.models import LLM, Response

    qs = LLM.objects.all()
    if user.is_superuser:
        return qs
    seen = Response.objects.filter(llm=OuterRef("pk"), question__dataset__in=datasets_visible(user))
    return qs.filter(Exists(seen))


class AmbiguousName(LookupError):
    """Several rows the caller may see answer to one name, and none is theirs or shared."""

    def __init__(self, what: str, name: str, ids: list[int]) -> None:
        self.ids = ids
        listed = ", ".join(map(str, ids))
        super().__init__(f"Several {what} are named {name!r} (ids {listed}); give the id.")


def one_named(qs: QuerySet, user, **lookup):
    """The row of `qs` (already cut to what `user` may see; None: the command line) that
    `lookup` names for `user`. Names are unique per owner, so: the user's own row first, then
    the shared one (no owner), then the only other one; None when none matches, AmbiguousName
    when several others match. Text with NUL matches nothing (PostgreSQL text cannot hold it)."""
    if any(isinstance(v, str) and "\x00" in v for v in lookup.values()):
        return None
    rows = list(qs.filter(**lookup).order_by("pk")[:20])
    uid = getattr(user, "pk", None)
    for tier in (
        [r for r in rows if uid is not None and r.owner_id == uid],
        [r for r in rows if r.owner_id is None],
        rows,
    ):
        if len(tier) == 1:
            return tier[0]
        if len(tier) > 1:
            what = qs.model._meta.verbose_name_plural
            raise AmbiguousName(str(what), str(next(iter(lookup.values()))), [r.pk for r in tier])
    return None


def get_study_for_organizer(user, study_id):
    """Fetch a study *and* check the organizer may see it; someone else's study is a 404."""
    return get_object_or_404(studies_for(user), pk=study_id)


class IsOrganizer(BasePermission):
    message = "Organizer rights are required."

    def has_permission(self, request, view) -> bool:
        return is_organizer(request.user)
