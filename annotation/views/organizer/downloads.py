"""Raw data downloads of a study for its organizer: ratings or responses as CSV, "Excel" CSV
(UTF-8 with a byte-order mark, so Excel reads Chinese text as UTF-8 instead of the system code
page, and text that would run as a formula prefixed with an apostrophe, since this file is meant to
be double-clicked open), JSONL or XLSX. The same export as the export_data command and the API;
the plain CSV keeps every value exact for pandas, R and re-imports."""

from __future__ import annotations

from collections.abc import Iterator

from django.http import Http404, HttpRequest, StreamingHttpResponse
from django.views.decorators.http import require_GET

from annotation import exports
from annotation.permissions import get_study_for_organizer, organizer_required

UTF8_BOM = b"\xef\xbb\xbf"
# The page's format names: "excel" is CSV with a BOM, the rest are the export's own formats.
DOWNLOAD_FORMATS = {"csv": "csv", "excel": "csv", "jsonl": "jsonl", "xlsx": "xlsx"}


def _with_bom(chunks: Iterator[bytes]) -> Iterator[bytes]:
    yield UTF8_BOM
    yield from chunks


@organizer_required
@require_GET
def study_download(request: HttpRequest, study_id: int, what: str, fmt: str):
    study = get_study_for_organizer(request.user, study_id)
    if what not in exports.WHATS or fmt not in DOWNLOAD_FORMATS:
        raise Http404
    export_fmt = DOWNLOAD_FORMATS[fmt]
    chunks = exports.export_iter(study, what=what, fmt=export_fmt, spreadsheet=fmt == "excel")
    if fmt == "excel":
        chunks = _with_bom(chunks)
    response = StreamingHttpResponse(chunks, content_type=exports.CONTENT_TYPES[export_fmt])
    filename = exports.export_filename(study, what=what, fmt=export_fmt)
    if fmt == "excel":
        filename = filename.replace(".csv", "-excel.csv")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response
