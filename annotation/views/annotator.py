"""Annotator pages: entry (onsite login, crowd link, public sign-up), the star and pairwise
screens, skip / previous, the end page.

Double-blind: annotators reach studies by Study.public_id and exposures by Assignment.public_id
(a UUID); pages show question, answers and (per exposure) the reference, never model names,
response ids or anyone else's ratings or counts. Every view resolves the rater from the session
or the account and 404s on an assignment that is not theirs.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import wraps
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth import get_user_model, login
from django.contrib.auth.forms import SetPasswordForm
from django.contrib.auth.models import AnonymousUser
from django.contrib.auth.tokens import default_token_generator
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.encoding import force_str
from django.utils.http import url_has_allowed_host_and_scheme, urlsafe_base64_decode
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotation import engine, inputs, leases, rater_cookie
from annotation import exposure_reads as reads
from annotation.drafts import draft_pop, draft_refuse
from annotation.htmx import HtmxHttpRequest, leave
from annotation.models import Assignment, Item, Rater, Study
from annotation.net import limit_key
from annotation.views.annotator_item import item_context
from annotation.views.item_html import item_fragment
from config.redis_cache import hit

SESSION_RATERS = "annotation_raters"  # {study public_id: rater id} for crowd / public raters
SESSION_MTURK = "annotation_mturk"  # {study public_id: {"assignmentId":..., "turkSubmitTo":...}}
PUBLIC_SIGNUPS_PER_HOUR = 20
PUBLIC_REQUESTS_PER_MINUTE = 120


# -- Who is asking ---------------------------------------------------------------------------


def _study(public_id: str) -> Study:
    # Drafts do not exist for annotators; paused and closed studies say so on their pages.
    # Anything that cannot be a public id (a NUL byte, a megabyte) is not a study either.
    if not inputs.is_public_id(public_id):
        raise Http404
    return get_object_or_404(
        Study.objects.select_related("rubric").exclude(status=Study.Status.DRAFT),
        public_id=public_id,
    )


def _rater_for(request: HttpRequest, study: Study) -> Rater | None:
    rater_id = request.session.get(SESSION_RATERS, {}).get(study.public_id)
    if rater_id:
        rater = Rater.objects.filter(pk=rater_id, kind=Rater.Kind.HUMAN).first()
        if rater is not None:
            return rater
    if request.user.is_authenticated:
        return Rater.objects.filter(user=request.user, pool=Rater.Pool.ONSITE).first()
    return None


def _remember(request: HttpRequest, study: Study, rater: Rater) -> None:
    raters = dict(request.session.get(SESSION_RATERS, {}))
    raters[study.public_id] = rater.pk
    request.session[SESSION_RATERS] = raters
    # And in a signed cookie, so the item screen's requests need not read the session.
    rater_cookie.remember(request, study.public_id, rater.pk)


def _throttled(rater: Rater) -> bool:
    """Public raters get a per-minute request budget; accounts and crowd workers are vetted."""
    if rater.pool != Rater.Pool.PUBLIC:
        return False
    return hit(f"annot-thr:{rater.pk}:{int(time.time() // 60)}", 120) > PUBLIC_REQUESTS_PER_MINUTE


def _too_many() -> HttpResponse:
    return HttpResponse(_("Too many requests: slow down a little."), status=429)


def _message(request, study, title: str, text: str, *, status: int) -> HttpResponse:
    return render(
        request,
        "annotation/message.html",
        {"study": study, "title": title, "text": text},
        status=status,
    )


def _address_busy(request, study: Study) -> HttpResponse:
    minutes = max(1, round(study.reservation_timeout / 60))
    return _message(
        request,
        study,
        _("Too many open items from your network"),
        _(
            "Other people on your network hold as many items of this study as one address may. "
            "Try again in %(minutes)d minutes."
        )
        % {"minutes": minutes},
        status=429,
    )


def client_tag(request: HttpRequest) -> str:
    return leases.client_tag(limit_key(request))


def pending_cookie(study: Study) -> str:
    """The signed cookie that holds a crowd link's ids until consent (views/entry.py)."""
    return f"crowd_{study.public_id}"


def _no_rater(request: HttpRequest, study: Study) -> HttpResponse:
    if study.admit_crowd and pending_cookie(study) in request.COOKIES:  # back to the consent
        return redirect("annotate:crowd", study_pid=study.public_id)
    if study.admit_onsite and not request.user.is_authenticated:
        return redirect(f"{reverse('login')}?{urlencode({'next': request.get_full_path()})}")
    return redirect("annotate:study", study_pid=study.public_id)


def _with_rater[R: HttpRequest](
    view: Callable[[R, Study, Rater], HttpResponse],
) -> Callable[[R, str], HttpResponse]:
    """A study page that needs the visitor's rater in the study: the view is called with the
    study and the rater; a visitor without one goes where _no_rater sends them."""

    @wraps(view)
    def wrapped(request: R, study_pid: str) -> HttpResponse:
        study = _study(study_pid)
        rater = _rater_for(request, study)
        if rater is None:
            return _no_rater(request, study)
        return view(request, study, rater)

    return wrapped


def _load_assignment(
    assignment_pid, *, for_display: bool = True, lock_rater: bool = False
) -> Assignment:
    if lock_rater:
        read = reads.EXPOSURE_LOCKING_RATER
    else:
        read = reads.EXPOSURE if for_display else reads.EXPOSURE_LIGHT
    a = read.get(assignment_pid)
    if not isinstance(a, Assignment):
        raise Http404
    return a


def _own_assignment(
    request: HttpRequest, assignment_pid, *, for_display: bool = True, lock_rater: bool = False
) -> tuple[Assignment, Rater]:
    """The visitor's exposure with its rater. lock_rater: the read also takes the rater's lock
    (inside the caller's transaction; only the rater and study are read)."""
    a = _load_assignment(assignment_pid, for_display=for_display, lock_rater=lock_rater)
    # The rater comes with the assignment; the visitor must be that rater: the one this session
    # joined the study as (crowd, public), or else the logged-in onsite annotator.
    rater = a.rater
    cookie = rater_cookie.verified(request, a.study.public_id)
    if cookie is not None and cookie[0] == rater.pk:
        # The signed cookie the session's rater came with (annotation/rater_cookie.py): the
        # session itself is not read. When it vouches that nobody is logged in, neither does
        # the page's account menu (request.user would read the session).
        mine = True
        if cookie[1]:
            request.user = AnonymousUser()
    elif session_rater := request.session.get(SESSION_RATERS, {}).get(a.study.public_id):
        mine = session_rater == rater.pk
    else:
        mine = (
            request.user.is_authenticated
            and rater.user_id == request.user.pk
            and rater.pool == Rater.Pool.ONSITE
        )
    # Someone else's assignment, or no rater at all: it does not exist for this visitor.
    if not mine or rater.kind != Rater.Kind.HUMAN or a.study.status == Study.Status.DRAFT:
        raise Http404
    return a, rater


# -- Rendering ------------------------------------------------------------------------------


def _render_item(request, a, rater, *, status=200, **kw) -> HttpResponse:
    context = item_context(a, rater, **kw)
    if not request.htmx:
        return render(request, "annotation/annotate.html", context, status=status)
    # htmx swaps in the template's `item` partial, written out by hand (views/item_html.py).
    response = HttpResponse(item_fragment(request, context), status=status)
    response["HX-Push-Url"] = context["urls"]["rate"]
    return response


def _show(request, a: Assignment, rater: Rater) -> HttpResponse:
    """Go to an assignment: the fragment for htmx, a redirect otherwise."""
    if request.htmx:
        return _render_item(request, a, rater)
    return redirect("annotate:assignment", assignment_pid=a.public_id)


def _serve_next(request: HtmxHttpRequest, study: Study, rater: Rater) -> HttpResponse:
    try:
        a = engine.assignment_next(study=study, rater=rater, client_tag=client_tag(request))
    except (engine.StudyUnavailable, engine.NotAdmitted):
        return leave(request, reverse("annotate:study", args=[study.public_id]))
    except leases.AddressBusy:
        return _address_busy(request, study)
    return _show_next(request, study, rater, a)


def _show_next(
    request: HtmxHttpRequest,
    study: Study,
    rater: Rater,
    a: Assignment | None,
    done: int | None = None,
) -> HttpResponse:
    """The answer once the next exposure is decided: it, or the end page. done: the rater's
    submitted count, when a submit just counted it."""
    if a is None:
        return leave(request, reverse("annotate:done", args=[study.public_id]))
    if not request.htmx:
        return redirect("annotate:assignment", assignment_pid=a.public_id)
    return _render_item(request, _with_item(a, study, rater), rater, done=done)


def _with_item(a: Assignment, study: Study, rater: Rater) -> Assignment:
    """The exposure the engine just served, with what the page shows: its item, question and
    answers in one read; its study and rater are those the request already holds."""
    if a.study_id != study.pk or a.rater_id != rater.pk:
        return _load_assignment(a.public_id)
    a.study, a.rater = study, rater
    if reads.item_is_loaded(a):  # the pick's statement returned it (engine_pick)
        return a
    item = reads.ITEM.get(a.item_id)
    if not isinstance(item, Item):
        raise Http404
    a.study, a.rater, a.item = study, rater, item
    return a


# -- Views -----------------------------------------------------------------------------------


@require_GET
def study_start(request: HttpRequest, study_pid: str) -> HttpResponse:
    """The study's landing page: instructions, how to join, a start button."""
    study = _study(study_pid)
    rater = _rater_for(request, study)
    admitted = rater is not None and study.admits_rater(rater)
    progress = None
    if rater is not None and admitted:
        progress = engine.rater_progress(study=study, rater=rater)
    return render(
        request,
        "annotation/start.html",
        {"study": study, "rater": rater, "admitted": admitted, "progress": progress},
    )


@require_GET
@_with_rater
def study_next(request: HtmxHttpRequest, study: Study, rater: Rater) -> HttpResponse:
    if _throttled(rater):
        return _too_many()
    if study.status != Study.Status.LIVE or not study.admits_rater(rater):
        return redirect("annotate:study", study_pid=study.public_id)
    if rater.pool == Rater.Pool.CROWD and not has_consented(rater, study):
        # Nothing is reserved before the worker has read the instructions and agreed.
        return redirect("annotate:crowd", study_pid=study.public_id)
    return _serve_next(request, study, rater)


def has_consented(rater: Rater, study: Study) -> bool:
    return study.public_id in (rater.meta or {}).get("consent", {})


def _renew_lease(a: Assignment, rater: Rater) -> None:
    """A page view is activity: it renews the rater's open lease in the study (the item on the
    page, or the one left open while they look at an earlier rating). A lease served moments ago
    needs nothing, which keeps the hot path (serve, then show) at one statement less."""
    now = timezone.now()
    lease = a.study.reservation_timeout
    expires = a.expires_at if a.status == Assignment.Status.SERVED else None
    if expires is not None and (expires - now).total_seconds() > lease / 2:
        return
    leases.renew(study=a.study, rater=rater, now=now)


def _bad_active_ms(request, assignment_pid) -> HttpResponse:
    a, rater = _own_assignment(request, assignment_pid)
    msg = _("The active time must be a whole number of milliseconds.")
    return _render_item(
        request, a, rater, posted=request.POST, errors=[msg], status=422 if request.htmx else 400
    )


@require_http_methods(["GET", "POST"])
def assignment_page(request: HtmxHttpRequest, assignment_pid) -> HttpResponse:
    """GET shows the item (or a recent rating to change); POST submits it and serves the next."""
    if request.method == "POST":
        return _submit(request, assignment_pid)
    a, rater = _own_assignment(request, assignment_pid)
    if _throttled(rater):
        return _too_many()
    # A rating's page is open while it can be changed; past that (or once repeated) it sends
    # its rater on, so the pages of earlier ratings never tell a hidden repeat apart.
    if a.status in (Assignment.Status.SKIPPED, Assignment.Status.EXPIRED) or (
        a.status == Assignment.Status.SUBMITTED and not engine.can_change(a)
    ):
        return redirect("annotate:next", study_pid=a.study.public_id)
    _renew_lease(a, rater)
    draft = draft_pop(request, assignment_pid=a.public_id)  # a rating refused while paused
    return _render_item(request, a, rater, posted=draft)


def _refused(request, a: Assignment, rater: Rater, active: str) -> HttpResponse | None:
    """Why a submit is not taken, before the engine is asked: too many requests, a study that
    is not running (the rating is kept as a draft), a malformed active time."""
    if _throttled(rater):
        return _too_many()
    if a.study.status != Study.Status.LIVE:
        return draft_refuse(request, assignment=a, post=request.POST)
    if active and inputs.small_int(active) is None:
        return _bad_active_ms(request, a.public_id)
    return None


def _submit(request: HtmxHttpRequest, assignment_pid) -> HttpResponse:
    """Submit and reserve the next item in one transaction (one commit, one WAL flush per item)
    whose first statement reads the exposure and takes the rater's lock; the next item is shown
    after the commit. A POST needs the study only; the answers are loaded when the form has to
    be shown again."""
    post = request.POST
    active = post.get("active_ms", "")
    try:
        with transaction.atomic():
            a, rater = _own_assignment(request, assignment_pid, for_display=False, lock_rater=True)
            refused = _refused(request, a, rater, active)
            if refused is not None:
                return refused
            result = engine.assignment_submit_and_next(
                assignment=a,
                rater=rater,
                rater_locked=True,
                scores={k[2:]: v for k, v in post.items() if k.startswith("c_")},
                choice=post.get("choice"),
                active_ms=inputs.small_int(active),
                client_tag=client_tag(request),
            )
    except ValidationError as e:
        a, rater = _own_assignment(request, assignment_pid)
        return _render_item(
            request,
            a,
            rater,
            posted=post,
            errors=e.messages,
            status=422 if request.htmx else 400,
        )
    except engine.AssignmentGone:
        messages.info(request, _("That item was handed on to someone else; here is a new one."))
        return _serve_next(request, a.study, rater)
    except (engine.StudyUnavailable, engine.NotAdmitted):
        return draft_refuse(request, assignment=a, post=post)
    except leases.AddressBusy:
        return _address_busy(request, a.study)
    return _show_next(request, a.study, rater, result[1], done=result.done)


@require_POST
def assignment_skip(request: HtmxHttpRequest, assignment_pid) -> HttpResponse:
    a, rater = _own_assignment(request, assignment_pid, for_display=False)
    if _throttled(rater):
        return _too_many()
    try:
        with transaction.atomic():
            engine.assignment_skip(assignment=a, rater=rater)
            return _serve_next(request, a.study, rater)
    except (engine.StudyUnavailable, engine.NotAdmitted):
        return _message(
            request,
            a.study,
            _("This study is not running"),
            _("Nothing was changed: the study is paused or closed."),
            status=409,
        )


@require_POST
def assignment_lease(request: HttpRequest, assignment_pid) -> HttpResponse:
    """The item page's heartbeat: the annotator is still there, keep their lease. 204 when it
    was renewed, 409 when the item is no longer theirs to hold (submitted, skipped, given away);
    409 with {"next": url} once it was held for ANNOTATION_MAX_HOLD: the page goes there, and
    the note saying why waits in the session's messages."""
    a, rater = _own_assignment(request, assignment_pid, for_display=False)
    if _throttled(rater):
        return _too_many()
    if a.status != Assignment.Status.SERVED or a.study.status != Study.Status.LIVE:
        return HttpResponse(status=409)
    now = timezone.now()
    if leases.held_too_long(a.served_at, now):
        return _held_too_long(request, a.study)
    leases.renew(study=a.study, rater=rater, now=now)
    return HttpResponse(status=204)


def _held_too_long(request: HttpRequest, study: Study) -> JsonResponse:
    cap = leases.max_hold()
    minutes = int(cap.total_seconds() // 60) if cap else 0
    note = ngettext(
        "This item was open for more than %(minutes)d minute, so it went back to the pool for "
        "other annotators. Here is your next item.",
        "This item was open for more than %(minutes)d minutes, so it went back to the pool for "
        "other annotators. Here is your next item.",
        minutes,
    ) % {"minutes": minutes}
    messages.info(request, note)
    return JsonResponse({"next": reverse("annotate:next", args=[study.public_id])}, status=409)


@require_GET
def assignment_previous(request: HtmxHttpRequest, assignment_pid) -> HttpResponse:
    a, rater = _own_assignment(request, assignment_pid)
    _renew_lease(a, rater)
    previous = engine.assignment_previous(study=a.study, rater=rater, before=a)
    if previous is None:
        messages.info(request, _("There is no earlier rating you can change."))
        if request.htmx:
            return _render_item(request, a, rater)
        return redirect("annotate:assignment", assignment_pid=a.public_id)
    return _show(request, _load_assignment(previous.public_id), rater)


@require_GET
@_with_rater
def study_previous(request: HttpRequest, study: Study, rater: Rater) -> HttpResponse:
    """From the end page: back to the rater's latest rating."""
    previous = engine.assignment_previous(study=study, rater=rater)
    if previous is None:
        return redirect("annotate:study", study_pid=study.public_id)
    return redirect("annotate:assignment", assignment_pid=previous.public_id)


@require_http_methods(["GET", "POST"])
def invite_accept(request: HttpRequest, uidb64: str, token: str) -> HttpResponse:
    """An onsite annotator invited by an organizer sets a password and is logged in."""
    user_model = get_user_model()
    try:
        user = user_model.objects.get(pk=force_str(urlsafe_base64_decode(uidb64)))
    except (ValueError, TypeError, OverflowError, user_model.DoesNotExist):
        user = None
    if user is None or not default_token_generator.check_token(user, token):
        return render(
            request, "annotation/message.html",
            {"title": _("Invitation not valid"),
             "text": _("This invitation link was used already or is wrong. Ask the organizer.")},
            status=404,
        )  # fmt: skip
    form = SetPasswordForm(user, request.POST or None)
    if request.method == "POST" and form.is_valid():
        form.save()
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        next_url = request.GET.get("next", "")
        if next_url and url_has_allowed_host_and_scheme(next_url, {request.get_host()}):
            return redirect(next_url)
        return redirect("annotate:my_studies")
    return render(request, "annotation/invite.html", {"form": form, "invited": user})


@require_GET
def my_studies(request: HttpRequest) -> HttpResponse:
    """An onsite annotator's list of live studies open to accounts."""
    rater = None
    if request.user.is_authenticated:
        rater = Rater.objects.filter(user=request.user, pool=Rater.Pool.ONSITE).first()
    if rater is None:
        if not request.user.is_authenticated:
            return redirect(f"{reverse('login')}?{urlencode({'next': request.path})}")
        raise Http404
    studies = Study.objects.filter(status=Study.Status.LIVE, admit_onsite=True)
    if rater.invited_by_id is not None:  # an organizer's account: that organizer's studies
        studies = studies.filter(Q(owner=None) | Q(owner_id=rater.invited_by_id))
    return render(request, "annotation/my_studies.html", {"studies": studies, "rater": rater})
