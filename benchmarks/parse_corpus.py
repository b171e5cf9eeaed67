"""How often the judge parsers give up, or guess, on realistic outputs; no database, no network.

    .venv/bin/python benchmarks/parse_corpus.py [--good 2000] [--bad 1000] [--seed 0]
                                                [--questions 200] [--compare-ref main]

1. The variant corpus (evaluation/testing/judge_outputs.py): star verdicts written the ways
   judges write them (Markdown bold, full-width colons, Chinese labels, star glyphs, '3/5',
   tables, JSON, any order) for the LLMEval-1 and LLMEval-2 rubrics. Prints the unparsed and
   ambiguous shares, and scores read wrong. Then outputs that must stay unparsed (a score missing,
   out of range, on another scale, given twice, '٣', '²', NUL bytes): prints how many were
   wrongly accepted.
2. The fake server's answers (evaluation/testing/fake_openai.py) to every built-in template's
   prompt, in text and JSON mode: prints the unparsed share per template.
3. LLMEval-2's released GPT-4 verdicts (../shared/data/llmeval-2/results/gpt-score, when present)
   written back in the paper's two forms, 'Label: N' lines and figure 11/12's JSON, and parsed:
   prints the unparsed share and the verdicts read differently from the file.
--compare-ref REF runs parts 1 and 3 again with evaluation/parsers.py as it is at git REF.
Target: 0% unparsed and 0 wrong on good outputs, 0 accepted bad outputs, 0% unparsed fake answers.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from types import ModuleType, SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from annotation.rubrics import ALIGNBENCH_DIMENSION_SET, builtin_rubric_specs  # noqa: E402
from evaluation import parsers, prompts  # noqa: E402
from evaluation.testing import judge_outputs  # noqa: E402
from evaluation.testing.fake_openai import answer_for  # noqa: E402


def _pct(n: int, total: int) -> str:
    return f"{100 * n / total:.2f}%" if total else "n/a"


def corpus(module: ModuleType, good: int, bad: int, seed: int) -> None:
    """Part 1 with the given parsers module (today's, or an older one for comparison)."""
    outcome: Counter[str] = Counter()
    by_family: Counter[str] = Counter()
    for case in judge_outputs.good_cases(good, seed):
        specs = [module.Spec(s.key, s.labels, s.lo, s.hi) for s in case.specs]
        try:
            scores = module.parse("stars", case.text, specs)["scores"]
        except module.ParseError as e:
            outcome["ambiguous" if "ambiguous" in str(e) else "unparsed"] += 1
            by_family[case.family] += 1
            continue
        outcome["right" if scores == case.expected else "wrong"] += 1
    print(
        f"  good outputs: {good}; unparsed {_pct(outcome['unparsed'], good)}, "
        f"ambiguous {_pct(outcome['ambiguous'], good)}, "
        f"scores read wrong {outcome['wrong']} ({_pct(outcome['wrong'], good)})"
    )
    if by_family:
        print("    failures by form: " + ", ".join(f"{k} {v}" for k, v in by_family.most_common()))
    accepted: Counter[str] = Counter()
    for case in judge_outputs.bad_cases(bad, seed + 1):
        specs = [module.Spec(s.key, s.labels, s.lo, s.hi) for s in case.specs]
        try:
            module.parse("stars", case.text, specs)
        except module.ParseError:
            continue
        accepted[case.family] += 1
    n_acc = sum(accepted.values())
    print(
        f"  outputs that must stay unparsed: {bad}; wrongly accepted {n_acc} ({_pct(n_acc, bad)})"
    )
    if accepted:
        print("    accepted by form: " + ", ".join(f"{k} {v}" for k, v in accepted.most_common()))


RELEASED = ROOT.parent / "shared" / "data" / "llmeval-2" / "results" / "gpt-score"
FIGURE_LABELS = {"Logicality": "Logicity"}  # the files' key -> the figures' label


def released(module: ModuleType) -> None:
    """Part 3: the published GPT-4 stars, rendered as a judge following figures 11/12 writes."""
    if not RELEASED.is_dir():
        print(f"  skipped: {RELEASED} not found")
        return
    rubric = judge_outputs.RUBRICS
    kinds = {"A": rubric["llmeval2-objective"], "B": rubric["llmeval2-subjective"]}
    outcome: Counter[str] = Counter()
    for path in sorted(RELEASED.glob("*.json")):
        for record in json.loads(path.read_text(encoding="utf-8")):
            specs = [module.Spec(s.key, s.labels, s.lo, s.hi) for s in kinds[record["type"]]]
            stars = {FIGURE_LABELS.get(k, k): v for k, v in record["stars"].items()}
            by_label = {s.labels[0]: s.key for s in kinds[record["type"]]}
            want = {by_label[k]: v for k, v in stars.items()}
            lines = "\n".join(f"{k}: {v}" for k, v in stars.items())
            for text in (lines, json.dumps(stars, indent=2)):
                try:
                    got = module.parse("stars", text, specs)["scores"]
                except module.ParseError as e:
                    outcome["ambiguous" if "ambiguous" in str(e) else "unparsed"] += 1
                    continue
                outcome["same" if got == want else "different"] += 1
    total = sum(outcome.values())
    print(
        f"  {total} verdicts (lines and JSON): unparsed {_pct(outcome['unparsed'], total)}, "
        f"ambiguous {_pct(outcome['ambiguous'], total)}, read differently {outcome['different']}"
    )


def _views(rubric_key: str) -> dict[str, list[prompts.CriterionView]]:
    """The built-in rubric's criteria per kind of question, as prompts see them."""
    spec = next(r for r in builtin_rubric_specs() if r["key"] == rubric_key)
    out: dict[str, list[prompts.CriterionView]] = {}
    for crit in spec["criteria"]:
        view = prompts.CriterionView.of(SimpleNamespace(**crit))  # as from a Criterion row
        kinds = [k for k in crit["applies_to"].split(",") if k] or ["any"]
        for kind in kinds:
            out.setdefault(kind, []).append(view)
    if "any" in out:  # criteria for every question join each specific kind
        for kind in list(out):
            if kind != "any":
                out[kind] = out["any"] + out[kind]
    return out


def _cases() -> list[tuple[str, dict, str, list[prompts.CriterionView]]]:
    """(label, template, answer type, criteria) for every built-in template."""
    templates = {t["key"]: t for t in prompts.BUILTIN_TEMPLATES}
    cases = [("llmeval1-star", templates["llmeval1-star"], "", _views("llmeval1")["any"])]
    for kind, views in _views("llmeval2").items():
        cases.append((f"llmeval2-star/{kind}", templates["llmeval2-star"], "", views))
    align = _views("alignbench")
    for answer_type in ALIGNBENCH_DIMENSION_SET:
        views = [v for v in align[answer_type] if v.key != "overall"] + [
            v for v in align["any"] if v.key == "overall"
        ]
        cases.append((f"alignbench/{answer_type}", templates["alignbench"], answer_type, views))
    for key in ("llmeval1-pairwise", "chinese-alpaca-eval"):
        cases.append((key, templates[key], "", []))
    return cases


def fake_answers(n_questions: int) -> None:
    for label, spec, answer_type, views in _cases():
        template = SimpleNamespace(**spec)
        specs = [
            parsers.Spec(v.key, (v.label_en, v.label_zh), v.min_score, v.max_score) for v in views
        ]
        failed = total = 0
        for i in range(n_questions):
            question = SimpleNamespace(
                text=f"问题 {i}：“王与马，共天下”发生在哪个朝代？",
                reference="东晋",
                task_type="factual question",
                answer_type=answer_type,
            )
            for json_mode in (False, True):
                ctx = prompts.render_context(
                    question=question,
                    criteria=views,
                    answer=f"回答 {i}",
                    answer_1=f"甲 {i}",
                    answer_2=f"乙 {i}",
                    hint_shown=bool(i % 2),
                    hint_format=spec["hint_format"],
                )
                messages = prompts.render_messages(template, ctx, json_mode=json_mode)
                total += 1
                try:
                    parsers.parse(spec["parser"], answer_for(messages, json_mode=json_mode), specs)
                except parsers.ParseError:
                    failed += 1
        print(f"  {label:<28} {total} answers, unparsed {_pct(failed, total)}")


def _parsers_at(ref: str) -> ModuleType:
    source = subprocess.run(
        ["git", "show", f"{ref}:evaluation/parsers.py"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    path = Path(tempfile.mkdtemp()) / "parsers_at_ref.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("parsers_at_ref", path)
    assert spec is not None and spec.loader is not None  # a .py file always has both
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--good", type=int, default=2000, help="good outputs in the corpus")
    ap.add_argument("--bad", type=int, default=1000, help="outputs that must stay unparsed")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--questions", type=int, default=200, help="questions per built-in template")
    ap.add_argument("--compare-ref", help="also run the corpus through parsers.py at this git ref")
    args = ap.parse_args()
    print("1. Variant corpus, evaluation/parsers.py of this tree")
    corpus(parsers, args.good, args.bad, args.seed)
    old = _parsers_at(args.compare_ref) if args.compare_ref else None
    if old is not None:
        print(f"   The same corpus, evaluation/parsers.py at {args.compare_ref}")
        corpus(old, args.good, args.bad, args.seed)
    print("2. Fake server answers to the built-in templates (text and JSON mode)")
    fake_answers(args.questions)
    print("3. LLMEval-2 GPT-4 verdicts as released, in the paper's line and JSON forms")
    released(parsers)
    if old is not None:
        print(f"   The same verdicts, evaluation/parsers.py at {args.compare_ref}")
        released(old)


if __name__ == "__main__":
    main()
