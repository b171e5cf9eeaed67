"""Import your own data in the browser: upload, preview what would be created (a dry run of the
same importer the command and the API use), then confirm. The uploaded files wait between the two
steps in a private staging folder named by a random token kept in the session, never by anything
the browser sends; a confirmed or abandoned upload is deleted."""

from __future__ import annotations

import re
import secrets
import shutil
import tempfile
import time
from pathlib import Path

from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.translation import get_language, pgettext_lazy
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotation.forms import DataImportForm
from annotation.importers import FORMATS, ImportRefused, ImportResult, dataset_import, save_uploads
from annotation.markdown import render_document
from annotation.models import Study
from annotation.permissions import organizer_required
from annotation.templatetags.organizer import option_names
from ranking.warm import reports_warm

SESSION_KEY = "import_staged"
STAGING_TTL_S = 3600
_TOKEN = re.compile(r"[0-9a-f]{32}")


def _staging_root() -> Path:
    return Path(tempfile.gettempdir()) / "llmeval-imports"


def _staging_dir(user, token: str) -> Path:
    return _staging_root() / f"{user.pk}-{token}"


def _sweep_stale() -> None:
    """Delete staged uploads older than an hour (abandoned previews)."""
    root = _staging_root()
    if not root.is_dir():
        return
    cutoff = time.time() - STAGING_TTL_S
    for folder in root.iterdir():
        if folder.is_dir() and folder.stat().st_mtime < cutoff:
            shutil.rmtree(folder, ignore_errors=True)


def _error_lines(source: ImportRefused | ImportResult) -> list[str]:
    """Per-line errors: the importer's list when it gives one, else its message a line each."""
    listed = getattr(source, "errors", None)
    if listed:
        return [str(e) for e in listed]
    if isinstance(source, ImportRefused):
        return [line for line in str(source).splitlines() if line.strip()]
    return []


# The preview's rows by the importer's entity keys (annotation.importers.results.ENTITIES).
ENTITY_LABELS = {
    "datasets": pgettext_lazy("import preview", "Datasets"),
    "questions": pgettext_lazy("import preview", "Questions"),
    "llms": pgettext_lazy("import preview", "LLMs"),
    "responses": pgettext_lazy("import preview", "Responses"),
    "studies": pgettext_lazy("import preview", "Studies"),
    "items": pgettext_lazy("import preview", "Items"),
    "raters": pgettext_lazy("import preview", "Raters"),
    "assignments": pgettext_lazy("import preview", "Assignments"),
    "ratings": pgettext_lazy("import preview", "Ratings"),
    "scores": pgettext_lazy("import preview", "Scores"),
}


def _counts(result: ImportResult) -> list[dict]:
    return [
        {
            "what": name,
            "label": ENTITY_LABELS.get(name, name),
            "added": result.added[name],
            "skipped": result.skipped.get(name, 0),
        }
        for name in result.added
        if result.added[name] or result.skipped.get(name, 0)
    ]


def _run(request: HttpRequest, staged: dict, *, dry_run: bool):
    """The import of the staged files: (result, errors)."""
    folder = _staging_dir(request.user, staged["token"])
    paths = sorted(p for p in folder.rglob("*") if p.is_file())
    try:
        result = dataset_import(
            format=staged["format"],
            paths=paths,
            user=request.user,
            dry_run=dry_run,
            progress=False,
            **staged["options"],
        )
    except ImportRefused as exc:
        return None, _error_lines(exc)
    reports_warm(result.study_ids, dry_run=result.dry_run)  # large studies' reports, queued
    return result, _error_lines(result)


def _render(request: HttpRequest, form, *, status: int = 200, **context) -> HttpResponse:
    # The help is the command's (gettext_noop in annotation.importers), shown in the page's language.
    formats = [{"name": f.name, "help": option_names(_(f.help))} for f in FORMATS.values()]
    context.update(form=form, formats=formats)
    return render(request, "annotation/organizer/import.html", context, status=status)


@organizer_required
@require_http_methods(["GET", "POST"])
def import_page(request: HttpRequest) -> HttpResponse:
    """GET: the upload form. POST: stage the files and show the dry run's preview."""
    form = DataImportForm(
        request.POST or None, request.FILES or None, formats=FORMATS, user=request.user
    )
    if request.method != "POST" or not form.is_valid():
        return _render(request, form, status=400 if request.method == "POST" else 200)
    _sweep_stale()
    _discard(request)
    token = secrets.token_hex(16)
    folder = _staging_dir(request.user, token)
    try:
        save_uploads(form.cleaned_data["files"], form.cleaned_data["folder"], folder)
    except ImportRefused as exc:
        shutil.rmtree(folder, ignore_errors=True)
        return _render(request, form, errors=_error_lines(exc), status=400)
    staged = {"token": token, "format": form.cleaned_data["format"], "options": form.options()}
    result, errors = _run(request, staged, dry_run=True)
    if result is None or errors:
        shutil.rmtree(folder, ignore_errors=True)
        return _render(request, form, errors=errors, status=400)
    request.session[SESSION_KEY] = staged
    preview = {
        "token": token,
        "counts": _counts(result),
        "notes": [*(r.line() for r in result.repairs), *result.notes],
        "files": [f.name for f in form.cleaned_data["files"]],
        "nothing_new": result.total_added == 0,
    }
    return _render(request, form, preview=preview)


def _discard(request: HttpRequest) -> dict | None:
    staged = request.session.pop(SESSION_KEY, None)
    if staged and _TOKEN.fullmatch(str(staged.get("token", ""))):
        shutil.rmtree(_staging_dir(request.user, staged["token"]), ignore_errors=True)
    return staged


@organizer_required
@require_POST
def import_confirm(request: HttpRequest) -> HttpResponse:
    """Write the previewed import: the staged files of this session, nothing else."""
    staged = request.session.get(SESSION_KEY)
    token = request.POST.get("token", "")
    if not staged or token != staged.get("token") or not _TOKEN.fullmatch(token):
        messages.error(request, _("This preview has expired or was used already: upload again."))
        return redirect("organize:import")
    if request.POST.get("action") == "cancel":
        _discard(request)
        messages.info(request, _("Import cancelled; nothing was written."))
        return redirect("organize:import")
    result, errors = _run(request, staged, dry_run=False)
    _discard(request)
    if result is None:
        messages.error(
            request,
            _("Refused, nothing was written: %(e)s") % {"e": option_names(" ".join(errors))},
        )
        return redirect("organize:import")
    messages.success(request, _("Imported: %(n)d rows added.") % {"n": result.total_added})
    _where_the_ratings_went(request, result.study_ids)
    if result.dataset_id:
        return redirect(f"{reverse('organize:study_new')}?dataset={result.dataset_id}")
    return redirect("organize:import")


def _where_the_ratings_went(request: HttpRequest, study_ids: list[int]) -> None:
    """The imported ratings' studies (closed, made by the import), each with a link to its
    report: the page after an import is the new-study form, which does not show them."""
    studies = Study.objects.filter(pk__in=study_ids).order_by("name")
    if not studies:
        return
    links = format_html_join(
        ", ",
        '<a href="{}">{}</a>',
        ((reverse("ranking:report", args=[s.pk]), s.name) for s in studies),
    )
    messages.info(
        request,
        format_html(
            _("Imported ratings are kept in closed studies of their own; reports: {}"), links
        ),
    )


def document_text(name: str, language: str) -> str:
    """docs/<name>.<language>.md when it exists (e.g. import-formats.zh-hans.md), else the
    English docs/<name>.md; empty when neither does. The language is an active language code
    (one of settings.LANGUAGES), never user text."""
    docs = Path(settings.BASE_DIR) / "docs"
    translated = [f"{name}.{language.lower()}.md"] if language else []
    for path in [docs / file for file in [*translated, f"{name}.md"]]:
        if path.exists():
            return path.read_text(encoding="utf-8")
    return ""


@organizer_required
@require_GET
def import_formats(request: HttpRequest) -> HttpResponse:
    """docs/import-formats.md, rendered (safely: no raw HTML) inside the app, in the page's
    language where a translation exists (docs/import-formats.zh-hans.md)."""
    text = document_text("import-formats", get_language() or "")
    return render(
        request, "annotation/organizer/import_formats.html", {"doc": render_document(text)}
    )
