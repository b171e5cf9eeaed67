"""Importers: one module per format, one shared writer (base.py). The command, the API and the
admin all call `dataset_import`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from django.conf import settings
from django.utils.translation import gettext_noop

from annotation.importers import alignbench, chinese_alpaca_eval, generic, llmeval1, llmeval2
from annotation.importers.base import (
    Bundle,
    ImportRefused,
    ImportRequest,
    ImportResult,
    Options,
    RepairLog,
    run_import,
)
from annotation.importers.bundle import message as _


@dataclass(frozen=True)
class Format:
    name: str
    help: str
    options: tuple[str, ...]  # which of dataset/study/rater/rater_kind/rubric apply


FORMATS: dict[str, Format] = {
    f.name: f
    for f in [
        Format(
            "llmeval2",
            gettext_noop(
                "LLMEval-2 questions and answers: data/<Subject>_data.json (subject -> task type, "
                "type A/B -> objective/subjective, hint -> reference)."
            ),
            ("dataset",),
        ),
        Format(
            "llmeval2-scores",
            gettext_noop(
                "LLMEval-2 scores: results/human-score/*.json (rater 'LLMEval-2 human panel') and "
                "results/gpt-score/*.json (rater 'GPT-4 (LLMEval-2)'), or any such file with --rater "
                "and --rater-kind. Adds missing questions and answers too; ratings go to a closed star "
                "study (default 'LLMEval-2 (imported scores)')."
            ),
            ("dataset", "study", "rater", "rater_kind"),
        ),
        Format(
            "llmeval1-scores",
            gettext_noop(
                "LLMEval-1 GPT-4 star scores: data/分项测评_gpt4.csv (long format). The texts were not "
                "released: questions and answers are empty placeholders (question.meta.placeholder)."
            ),
            ("dataset", "study", "rater", "rater_kind"),
        ),
        Format(
            "alignbench",
            gettext_noop(
                "AlignBench questions: data/data_v1.1_release.jsonl or data_release_v1.0.jsonl "
                "(subcategory -> answer type; reference -> reference answer)."
            ),
            ("dataset",),
        ),
        Format(
            "chinese-alpaca-eval",
            gettext_noop(
                "ChineseAlpacaEval: data/chinese_alpaca_eval.jsonl, model_outputs/<model>.jsonl and "
                "results/<model>_vs_<reference>.jsonl (judge's pairwise choices), or the folder."
            ),
            ("dataset", "study"),
        ),
        Format(
            "jsonl",
            gettext_noop(
                "Your own data, one JSON object a line typed question/response/rating/pairwise, "
                "with times, pools, repeats, hints, sides, active time and unparsed judge outputs "
                "(docs/import-formats.md; export_data --what generic writes it). Needs --dataset; "
                "star ratings need --rubric."
            ),
            ("dataset", "study", "rubric"),
        ),
        Format(
            "csv",
            gettext_noop(
                "Your own data as CSV with a 'type' column, same fields as jsonl "
                "(docs/import-formats.md). Needs --dataset; star ratings need --rubric."
            ),
            ("dataset", "study", "rubric"),
        ),
    ]
}


PARSERS: dict[str, Callable[[list[Path], RepairLog, Options], Bundle]] = {
    "llmeval2": partial(llmeval2.parse, scores=False),
    "llmeval2-scores": partial(llmeval2.parse, scores=True),
    "llmeval1-scores": llmeval1.parse,
    "alignbench": alignbench.parse,
    "chinese-alpaca-eval": chinese_alpaca_eval.parse,
    "jsonl": partial(generic.parse, fmt="jsonl"),
    "csv": partial(generic.parse, fmt="csv"),
}


def _files(paths: Sequence[str | Path], format: str) -> list[Path]:
    """The paths to import, each an existing file (a folder only for ChineseAlpacaEval)."""
    files = [Path(p) for p in paths]
    if not files:
        raise ImportRefused(_("no files given"))
    for p in files:
        if not p.exists():
            raise ImportRefused(_("%(file)s: no such file", file=p))
        if p.is_dir() and format != "chinese-alpaca-eval":
            raise ImportRefused(_("%(file)s: a folder; give the files", file=p))
    return files


def dataset_import(
    *,
    format: str,
    paths: Sequence[str | Path],
    user=None,
    dry_run: bool = False,
    progress: bool = True,
    dataset: str | None = None,
    study: str | None = None,
    rater: str | None = None,
    rater_kind: str | None = None,
    rubric: str | None = None,
) -> ImportResult:
    """Import files of one format: everything or nothing (raises ImportRefused)."""
    spec = FORMATS.get(format)
    if spec is None:
        raise ImportRefused(
            _(
                "unknown format %(format)s: use one of %(formats)s",
                format=repr(format),
                formats=", ".join(FORMATS),
            )
        )
    given = {
        "dataset": dataset,
        "study": study,
        "rater": rater,
        "rater_kind": rater_kind,
        "rubric": rubric,
    }
    extra = [k for k, v in given.items() if v and k not in spec.options]
    if extra:
        raise ImportRefused(
            _(
                "the %(format)s format takes no %(options)s",
                format=format,
                options=", ".join("--" + k.replace("_", "-") for k in extra),
            )
        )
    files = _files(paths, format)
    chosen = {k: v for k, v in given.items() if k in spec.options and v not in (None, "")}
    request = ImportRequest(
        format=format,
        paths=tuple(files),
        options=Options(
            **chosen,
            progress=progress,
            owner=user if getattr(user, "is_authenticated", False) else None,
        ),
        user=user,
        dry_run=dry_run,
    )

    def parse(repairs: RepairLog) -> Bundle:
        return PARSERS[format](files, repairs, request.options)

    return run_import(request, parse)


def dataset_preview(**options: Any) -> dict[str, Any]:
    """What `dataset_import(..., dry_run=True)` would do, as a dict for a preview page; bad input
    is reported, never raised: {"ok", "added", "skipped" (per table), "repairs" (repair and flag
    lines), "errors" (one line per bad record, naming file and line)}. Nothing is written."""
    try:
        result = dataset_import(**options, dry_run=True)
    except ImportRefused as exc:
        return {
            "ok": False,
            "added": {},
            "skipped": {},
            "repairs": [],
            "errors": [str(e) for e in exc.errors],
        }
    return {
        "ok": True,
        "added": result.added,
        "skipped": result.skipped,
        "repairs": [r.line() for r in result.repairs],
        "errors": [],
    }


MAX_FILE_NAME_BYTES = 200


def _refuse_oversized(files) -> None:
    """Refuse uploads that together pass IMPORT_UPLOAD_MAX_MB (0: no cap): the importers parse
    a file whole in memory and the browser import keeps a previewed upload for an hour, so one
    huge upload could exhaust the server's memory or disk for everyone. The command line, which
    reads the operator's own files, has no cap."""
    cap_mb = int(getattr(settings, "IMPORT_UPLOAD_MAX_MB", 256))
    total = sum(int(getattr(f, "size", 0) or 0) for f in files)
    if cap_mb > 0 and total > cap_mb * 1024 * 1024:
        raise ImportRefused(
            _(
                "the upload is %(size)s MB, more than the %(cap)s MB this server takes in the "
                "browser and the API (IMPORT_UPLOAD_MAX_MB); split it into smaller uploads, or "
                "import it on the server with manage.py import_dataset",
                size=f"{total / (1024 * 1024):.1f}",
                cap=cap_mb,
            )
        )


def save_uploads(files, folder: str, tmp: str | Path) -> list[Path]:
    """Write uploaded files into a temporary folder for the importers (API and admin). The file
    name is kept (formats read the subject or the model from it), never a client's path; folder
    (e.g. "human-score") stands for the folder the files came from. Uploads over
    IMPORT_UPLOAD_MAX_MB are refused before a byte is written."""
    _refuse_oversized(files)
    base = Path(tmp) / folder if folder else Path(tmp)
    base.mkdir(parents=True, exist_ok=True)
    out = []
    for f in files:
        name = Path(f.name).name
        if not name or name.startswith(".") or "\x00" in name:
            raise ImportRefused(_("unusable file name %(name)s", name=repr(f.name)))
        if len(name.encode()) > MAX_FILE_NAME_BYTES:  # the file system's limit is 255 bytes
            raise ImportRefused(
                _("the file name %(name)s... is too long; shorten it", name=repr(name[:40]))
            )
        target = base / name
        if target in out:  # a second file of the same name would replace the first
            raise ImportRefused(_("two files are named %(name)s; rename one", name=repr(name)))
        with open(target, "wb") as fh:
            for chunk in f.chunks():
                fh.write(chunk)
        out.append(target)
    return out


__all__ = [
    "FORMATS",
    "ImportRefused",
    "ImportResult",
    "dataset_import",
    "dataset_preview",
    "save_uploads",
]
