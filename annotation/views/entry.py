"""How crowd and public annotators arrive and how everyone leaves a study.

- Crowd entry (Prolific, MTurk): the ids are checked (printable, at most 200 characters), the
  worker sees the study's instructions and a consent box first; nothing is reserved until they
  agree. A worker who already agreed goes straight to their open or next item; one who arrives
  when the study has nothing left for them goes straight to the end page.
- A link with ids nobody has used yet writes nothing, not even a session: the ids wait in a
  signed cookie until the consent POST, which creates the rater. New identities per client
  address are capped per hour (ANNOTATION_CROWD_ARRIVALS_PER_HOUR), so a stranger replaying the
  link with made-up ids cannot fill the database with raters and sessions.
- Public sign-up: a nickname and consent, rate-limited per client address.
- The end page says where the rater stands (annotation/outcome.py) and shows a crowd code only
  when it was earned: the completion code, or the study's no-more-work code.
"""

from __future__ import annotations

import time

from django.conf import settings
from django.core import signing
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods

from annotation import inputs, outcome, rater_cookie
from annotation.forms import JoinForm
from annotation.htmx import HtmxHttpRequest
from annotation.models import Rater, Study
from annotation.net import limit_key
from annotation.views.annotator import (
    PUBLIC_SIGNUPS_PER_HOUR,
    SESSION_MTURK,
    _message,
    _no_rater,
    _rater_for,
    _remember,
    _serve_next,
    _study,
    _too_many,
    has_consented,
    pending_cookie,
)
from config.redis_cache import hit

MTURK_PREVIEW = "ASSIGNMENT_ID_NOT_AVAILABLE"
MTURK_HOSTS = ("https://www.mturk.com", "https://workersandbox.mturk.com")
# Query parameter -> where it is kept, per platform.
PROLIFIC_META = {"STUDY_ID": "study_id", "SESSION_ID": "session_id"}
MTURK_META = {"hitId": "hit_id", "assignmentId": "assignment_id"}
ENTRY_PARAMS = ("PROLIFIC_PID", *PROLIFIC_META, "workerId", *MTURK_META, "turkSubmitTo")
PENDING_SALT = "annotation.crowd-entry"
PENDING_MAX_AGE = 24 * 3600


def _crowd_identity(query) -> tuple[str, str, dict[str, str]]:
    """(platform, worker id, meta) from the entry URL; ValueError when an id is unusable."""
    if query.get("PROLIFIC_PID"):
        platform, worker, names = "prolific", query["PROLIFIC_PID"], PROLIFIC_META
    elif query.get("workerId"):
        platform, worker, names = "mturk", query["workerId"], MTURK_META
    else:
        raise LookupError
    meta = {key: inputs.external_id(query.get(param, "")) for param, key in names.items()}
    if platform == "mturk":
        meta["submit_to"] = inputs.external_id(query.get("turkSubmitTo", ""))
    return platform, inputs.external_id(worker, required=True), meta


def with_link_ids(old: dict, study: Study, ids: dict[str, str]) -> dict:
    """A crowd rater's meta with the platform ids of a link of `study`: the latest link's at the
    top level, and each study's own under "links" (an MTurk assignment id is one HIT's, so the
    approvals of one study must not take the id of a HIT of another). A link without an id
    leaves the one kept for the study."""
    links = dict(old.get("links") or {})
    kept = dict(links.get(study.public_id) or {})
    kept.update({k: v for k, v in ids.items() if v})
    links[study.public_id] = kept
    return {**old, **ids, "links": links}


def _has_ids(query) -> bool:
    return bool(query.get("PROLIFIC_PID") or query.get("workerId"))


def _missing_worker_id(request: HttpRequest, study: Study) -> HttpResponse:
    return _message(
        request,
        study,
        _("Missing worker id"),
        _("Open this study from the link on your crowd-sourcing platform."),
        status=400,
    )


def _pending_ids(request: HttpRequest, study: Study) -> QueryDict | None:
    """The ids of a link opened before consent, from the signed cookie the entry page set."""
    value = request.COOKIES.get(pending_cookie(study))
    if not value:
        return None
    try:
        ids = signing.loads(value, salt=PENDING_SALT, max_age=PENDING_MAX_AGE)
    except signing.BadSignature:
        return None
    if not isinstance(ids, dict):
        return None
    query = QueryDict(mutable=True)
    query.update({k: v for k, v in ids.items() if k in ENTRY_PARAMS and isinstance(v, str)})
    return query


def _keep_pending(response: HttpResponse, study: Study, query) -> HttpResponse:
    """Sign the link's ids into a cookie (URL-safe characters only, so any client keeps it)."""
    ids = {name: query[name] for name in ENTRY_PARAMS if query.get(name)}
    response.set_cookie(
        pending_cookie(study),
        signing.dumps(ids, salt=PENDING_SALT, compress=True),
        max_age=PENDING_MAX_AGE,
        httponly=True,
        samesite="Lax",
        secure=settings.SESSION_COOKIE_SECURE,
    )
    return response


def _new_arrival_refused(request: HttpRequest, what: str = "new") -> bool:
    """One more new crowd identity (what="new") or one more new browser session of a known one
    (what="session") from this address this hour would pass the cap; each has its own count."""
    cap = int(getattr(settings, "ANNOTATION_CROWD_ARRIVALS_PER_HOUR", 200))
    if cap <= 0:
        return False
    key = f"annot-crowd-{what}:{limit_key(request)}:{int(time.time() // 3600)}"
    return hit(key, 3700) > cap


def _too_many_arrivals(request: HttpRequest, study: Study, *, known: bool = False) -> HttpResponse:
    """The 429 of the cap: new worker ids, or (known) new browsers of known ones."""
    if known:
        text = _(
            "This study was opened in too many new browsers from your address this hour. "
            "Try again later."
        )
    else:
        text = _("Too many new worker ids arrived from your address this hour. Try again later.")
    return _message(request, study, _("Too many new workers from your network"), text, status=429)


def _crowd_rater(
    request: HttpRequest, study: Study, query, *, create: bool
) -> Rater | HttpResponse:
    """The crowd rater the ids in `query` name, remembered in the session. A worker nobody has
    seen is created only when `create` (the consent POST); otherwise an unsaved Rater."""
    try:
        platform, worker, meta = _crowd_identity(query)
    except LookupError:
        return _missing_worker_id(request, study)
    except ValueError:
        return _message(
            request,
            study,
            _("Invalid worker id"),
            _("The ids in this link are not valid. Open the study again from your platform."),
            status=400,
        )
    submit_to = meta.pop("submit_to", None)
    key = {"kind": Rater.Kind.HUMAN, "pool": Rater.Pool.CROWD, "platform": platform}
    rater = Rater.objects.filter(**key, external_id=worker).first()
    if rater is None:
        if not create:
            return Rater(**key, external_id=worker, meta=meta)
        if _new_arrival_refused(request):
            return _too_many_arrivals(request, study)
        rater, _created = Rater.objects.get_or_create(
            **key, external_id=worker, defaults={"meta": with_link_ids({}, study, meta)}
        )
    elif request.session.session_key is None and _new_arrival_refused(request, "session"):
        # A known id opened without a session (a new browser) starts one: a session row. The
        # link replayed without cookies would otherwise write a row a request.
        return _too_many_arrivals(request, study, known=True)
    updated = with_link_ids(rater.meta or {}, study, meta)
    if updated != rater.meta:
        rater.meta = updated
        rater.save(update_fields=["meta"])
    if submit_to is not None:
        mturk = dict(request.session.get(SESSION_MTURK, {}))
        mturk[study.public_id] = {"assignmentId": meta["assignment_id"], "turkSubmitTo": submit_to}
        request.session[SESSION_MTURK] = mturk
    _remember(request, study, rater)
    return rater


@require_http_methods(["GET", "POST"])
@rater_cookie.sets_rater_cookies
def crowd_entry(request: HtmxHttpRequest, study_pid: str) -> HttpResponse:
    """Prolific: ?PROLIFIC_PID=&STUDY_ID=&SESSION_ID=; MTurk: ?workerId=&assignmentId=&hitId=
    &turkSubmitTo= (a preview while assignmentId is ASSIGNMENT_ID_NOT_AVAILABLE). GET shows the
    instructions and the consent box; POST (the box ticked) records consent and serves."""
    study = _study(study_pid)
    if not study.admit_crowd:
        raise Http404
    if request.method == "POST":
        return _crowd_consent(request, study)
    if request.GET.get("assignmentId") == MTURK_PREVIEW:
        return render(request, "annotation/crowd_preview.html", {"study": study})
    rater = _rater_for(request, study)
    # The link's ids; without any, those of the link opened before consent.
    query: QueryDict = request.GET
    if not _has_ids(query):
        query = _pending_ids(request, study) or query
    if rater is None or rater.pool != Rater.Pool.CROWD or _has_ids(request.GET):
        # A new arrival, or a link with ids (which always win over the session).
        arrived = _crowd_rater(request, study, query, create=False)
        if isinstance(arrived, HttpResponse):
            return arrived
        rater = arrived
    if study.status == Study.Status.PAUSED:
        return redirect("annotate:study", study_pid=study.public_id)
    if has_consented(rater, study) and study.status == Study.Status.LIVE:
        return _serve_next(request, study, rater)
    if outcome.rater_outcome(study=study, rater=rater).state == outcome.NO_MORE_WORK:
        if rater.pk is None:  # the end page shows the no-more-work code to a known rater
            created = _crowd_rater(request, study, query, create=True)
            if isinstance(created, HttpResponse):
                return created
        return redirect("annotate:done", study_pid=study.public_id)
    page = render(request, "annotation/crowd_start.html", {"study": study})
    if rater.pk is None:
        return _keep_pending(page, study, query)
    if pending_cookie(study) in request.COOKIES:  # an earlier link's ids must not win now
        page.delete_cookie(pending_cookie(study), samesite="Lax")
    return page


def _crowd_consent(request: HtmxHttpRequest, study: Study) -> HttpResponse:
    pending = _pending_ids(request, study)
    rater = _rater_for(request, study)
    if pending is None and (rater is None or rater.pool != Rater.Pool.CROWD):
        return _missing_worker_id(request, study)
    if request.POST.get("consent") != "yes":
        context = {"study": study, "error": _("Tick the box to agree before you start.")}
        return render(request, "annotation/crowd_start.html", context, status=400)
    if pending is not None:  # the ids of the link just opened win over the session
        arrived = _crowd_rater(request, study, pending, create=True)
        if isinstance(arrived, HttpResponse):
            return arrived
        rater = arrived
    if rater is None:
        return _missing_worker_id(request, study)
    response = _consented(request, study, rater)
    if pending is not None:
        response.delete_cookie(pending_cookie(study), samesite="Lax")
    return response


def _consented(request: HtmxHttpRequest, study: Study, rater: Rater) -> HttpResponse:
    if not has_consented(rater, study):
        consent = dict((rater.meta or {}).get("consent", {}))
        consent[study.public_id] = timezone.now().isoformat()
        rater.meta = {**(rater.meta or {}), "consent": consent}
        rater.consented_at = rater.consented_at or timezone.now()
        rater.save(update_fields=["meta", "consented_at"])
    if study.status != Study.Status.LIVE:
        return redirect("annotate:study", study_pid=study.public_id)
    return _serve_next(request, study, rater)


@require_http_methods(["GET", "POST"])
@rater_cookie.sets_rater_cookies
def public_join(request: HttpRequest, study_pid: str) -> HttpResponse:
    """Light sign-up for the public: a nickname and consent, rate-limited per address."""
    study = _study(study_pid)
    if not study.admit_public:
        raise Http404
    rater = _rater_for(request, study)
    if rater is not None and rater.pool == Rater.Pool.PUBLIC:
        return redirect("annotate:next", study_pid=study.public_id)
    form = JoinForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        if form.cleaned_data.get("website"):
            raise Http404
        key = f"annot-join:{limit_key(request)}:{int(time.time() // 3600)}"
        if hit(key, 3700) > PUBLIC_SIGNUPS_PER_HOUR:
            return _too_many()
        rater = Rater.objects.create(
            kind=Rater.Kind.HUMAN,
            pool=Rater.Pool.PUBLIC,
            nickname=form.cleaned_data["nickname"],
            consented_at=timezone.now(),
        )
        _remember(request, study, rater)
        return redirect("annotate:next", study_pid=study.public_id)
    status = 400 if request.method == "POST" else 200  # a refused sign-up is the client's error
    return render(request, "annotation/join.html", {"study": study, "form": form}, status=status)


def _safe_mturk_submit(turk_submit_to: str) -> str:
    base = (turk_submit_to or "").rstrip("/")
    return base if base in MTURK_HOSTS else MTURK_HOSTS[0]


@require_GET
def study_done(request: HttpRequest, study_pid: str) -> HttpResponse:
    """The end page. Opening it directly earns nothing: it shows a code only by the rule in
    annotation/outcome.py, and otherwise what is left to do."""
    study = _study(study_pid)
    rater = _rater_for(request, study)
    if rater is None:
        return _no_rater(request, study)
    result = outcome.rater_outcome(study=study, rater=rater)
    context = {"study": study, "rater": rater, "outcome": result, "completion_code": result.code}
    if result.code:
        if rater.platform == "prolific" and study.completion_url:
            context["completion_url"] = study.completion_url
        mturk = request.session.get(SESSION_MTURK, {}).get(study.public_id)
        if rater.platform == "mturk" and mturk:
            context["mturk_action"] = (
                _safe_mturk_submit(mturk.get("turkSubmitTo", "")) + "/mturk/externalSubmit"
            )
            context["mturk_assignment_id"] = mturk.get("assignmentId", "")
    context["open_item"] = result.state == outcome.ITEM_OPEN
    return render(request, "annotation/done.html", context)
