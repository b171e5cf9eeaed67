"""AlignBench questions: `data/data_v1.1_release.jsonl` (and the earlier `data_release_v1.0.jsonl`),
one JSON object a line: question_id, category, subcategory, question, reference, evidences (v1.1).

The subcategory selects the answer type, which selects the judging dimensions of the built-in
`alignbench` rubric. The mapping is AlignBench's config/subcategory_question_mapping.json, copied
here because the app must not read ../shared at run time.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import annotation.importers.bundle as specs
from annotation.importers.base import ImportRefused, Options, RepairLog, as_text, progress
from annotation.importers.bundle import Place, place
from annotation.importers.bundle import message as _
from annotation.importers.reading import read_jsonl

SUBCATEGORY_ANSWER_TYPE = {
    "常识知识": "事实与解释型回答",
    "阅读理解": "事实与解释型回答",
    "翻译": "生成型回答",
    "文本分类": "事实与解释型回答",
    "信息抽取": "事实与解释型回答",
    "字词理解": "事实与解释型回答",
    "文化理解": "事实与解释型回答",
    "观点表达": "建议型回答",
    "寻求建议": "建议型回答",
    "实用文体写作": "生成型回答",
    "创意文体写作": "生成型回答",
    "专业文体写作": "生成型回答",
    "其他写作类": "生成型回答",
    "证明": "逻辑推理型回答",
    "推理": "逻辑推理型回答",
    "初等数学": "逻辑推理型回答",
    "高等数学": "逻辑推理型回答",
    "应用数学": "逻辑推理型回答",
    "现实生活类": "生成型回答",
    "游戏娱乐类": "生成型回答",
    "功能类": "生成型回答",
    "现实名人类": "生成型回答",
    "（虚拟）恋爱类": "生成型回答",
    "物理": "事实与解释型回答",
    "化学": "事实与解释型回答",
    "计算机": "事实与解释型回答",
    "生物医学": "事实与解释型回答",
    "经济": "事实与解释型回答",
    "天文": "事实与解释型回答",
    "历史": "事实与解释型回答",
    "音乐": "事实与解释型回答",
    "法律": "事实与解释型回答",
    "体育": "事实与解释型回答",
    "地理": "事实与解释型回答",
    "文学": "事实与解释型回答",
    "其他": "事实与解释型回答",
}
KNOWN_KEYS = {"question_id", "category", "subcategory", "question", "reference", "evidences"}


def dataset_name(path: Path) -> str:
    name = path.name.lower()
    if "v1.1" in name:
        return "AlignBench v1.1"
    if "v1.0" in name:
        return "AlignBench v1.0"
    return "AlignBench"


def _stray_keys(rec: dict, path: Path, rid: str, repairs: RepairLog) -> None:
    for key in sorted(set(rec) - KNOWN_KEYS):
        if key.isdigit() and isinstance(rec[key], dict):
            repairs.add(
                "an earlier revision of the record nested under a stray numeric key: "
                "dropped from the record, kept in question.meta['superseded_revision']",
                path,
                f"{rid} key {key!r}",
            )
        else:
            repairs.add(f"ignored the unknown field {key!r}", path, rid)


def _meta(rec: dict, path: Path, rid: str) -> dict:
    meta: dict = {}
    evidences = rec.get("evidences")
    if evidences:
        if not isinstance(evidences, list):
            raise ImportRefused(
                _("%(where)s: evidences must be a list", where=place(path.name, rid))
            )
        meta["evidences"] = evidences
    stray = [rec[k] for k in rec if k.isdigit() and isinstance(rec[k], dict)]
    if stray:
        meta["superseded_revision"] = stray[0]
    return meta


def _question(
    rec: Any, path: Path, number: int, repairs: RepairLog
) -> tuple[specs.QuestionSpec, str]:
    """One checked record as a question, and its name for messages."""
    rid = f"line {number}"
    if not isinstance(rec, dict):
        raise ImportRefused(_("%(where)s: expected an object", where=place(path.name, rid)))
    qid = rec.get("question_id")
    if isinstance(qid, bool) or qid in (None, ""):
        raise ImportRefused(_("%(where)s: question_id is missing", where=place(path.name, rid)))
    qid = str(qid).strip()
    rid = Place(f"line {number} (question_id %(qid)s)", qid=qid)
    _stray_keys(rec, path, rid, repairs)
    for key in ("question", "subcategory"):
        if not rec.get(key):
            raise ImportRefused(
                _("%(where)s: %(key)s is missing or empty", where=place(path.name, rid), key=key)
            )

    def text(key: str) -> str:
        value = rec.get(key)
        return (
            ""
            if value is None
            else as_text(value, what=key, file=path, record=rid, repairs=repairs)
        )

    sub = text("subcategory")
    answer_type = SUBCATEGORY_ANSWER_TYPE.get(sub)
    if answer_type is None:
        raise ImportRefused(
            _(
                "%(where)s: unknown subcategory %(name)s (no answer type for it)",
                where=place(path.name, rid),
                name=f"{sub!r:.40}",
            )
        )
    spec = specs.QuestionSpec(
        external_id=qid,
        text=text("question"),
        task_type=text("category") if rec.get("category") else "",
        subcategory=sub,
        answer_type=answer_type,
        reference=text("reference"),
        meta=_meta(rec, path, rid),
    )
    return spec, place(path.name, rid)


def parse(paths: list[Path], repairs: RepairLog, opts: Options) -> specs.Bundle:
    names = {dataset_name(Path(p)) for p in paths}
    if opts.dataset is None and len(names) > 1:
        raise ImportRefused(
            _(
                "the files are different AlignBench releases (their question ids overlap); "
                "import them one at a time or name one dataset with --dataset"
            )
        )
    bundle = opts.bundle(
        names.pop(),
        "AlignBench: Chinese alignment benchmark, 8 categories, reference "
        "answers; the subcategory selects the answer type and the judging dimensions.",
        "github.com/THUDM/AlignBench",
    )
    seen: dict[str, tuple[str, tuple]] = {}
    for path in map(Path, paths):
        lines = read_jsonl(path)
        for number, rec in progress(lines, total=len(lines), desc=path.name, enabled=opts.progress):
            spec, where = _question(rec, path, number, repairs)
            snapshot = (spec.text, spec.reference, spec.subcategory, spec.task_type)
            if spec.external_id in seen:
                if seen[spec.external_id][1] == snapshot:
                    repairs.add("duplicated record dropped", path, where.split(", ", 1)[1])
                    continue
                raise ImportRefused(
                    _(
                        "%(where)s: question_id %(id)s appears twice with different content "
                        "(first in %(first_where)s)",
                        where=where,
                        id=spec.external_id,
                        first_where=seen[spec.external_id][0],
                    )
                )
            seen[spec.external_id] = (where, snapshot)
            bundle.add_question(spec, where=where)
    return bundle
