"""Who may do what. Organizers are staff users or members of the "organizers" group; they see
every dataset but only the studies they own (superusers see all)."""

from __future__ import annotations

from functools import wraps

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404
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
            return redirect_to_login(request.get_full_path())
        if not is_organizer(request.user):
            raise PermissionDenied
        return view(request, *args, **kwargs)

    return wrapper


def studies_for(user):
    from annotation.models import Study

    qs = Study.objects.all()
    return qs if user.is_superuser else qs.filter(owner=user)


def get_study_for_organizer(user, study_id):
    """Fetch a study *and* check the organizer may see it; someone else's study is a 404."""
    return get_object_or_404(studies_for(user), pk=study_id)


class IsOrganizer(BasePermission):
    message = "Organizer rights are required."

    def has_permission(self, request, view) -> bool:
        return is_organizer(request.user)
