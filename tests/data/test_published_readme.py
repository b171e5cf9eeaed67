"""LLMEval-2's published figures, counted: the gaps of seed Tables 4 and 5 as exact fractions of
the answers, and the upstream README's table (read from the copy in ../shared/data) per criterion,
against the report of the release imported as a user would (the session's one import,
tests/data/conftest.py) and a recomputation by hand from the files."""

from __future__ import annotations

import json
import re
from collections import defaultdict

import pytest

from tests.data.conftest import SHARED
from tests.published import one_row

# As test_published_figures.py: the same worker and the same one import of the release; the
# figures are the same on any database (the PostgreSQL pass checks the import and the frames).
pytestmark = [
    pytest.mark.slow,
    pytest.mark.django_db,
    pytest.mark.database_independent,
    pytest.mark.xdist_group("published-figures"),
]

DATA = SHARED / "llmeval-2"
# Published names (upstream README) -> the names in the released files.
README_NAMES = {
    "GPT4": "GPT4",
    "GPT3.5": "GPT3.5",
    "Xunfei-Xinghuo": "xunfei",
    "Baichuan-13B-Chat": "baichuan-13b-chat",
    "MiniMax-abab5": "minimax-abab5",
    "NewBing": "newbing",
    "Claude": "claude",
    "moss-mars": "moss-mars",
    "Kunlun-Tiangong": "tiangong",
    "Ziya-LLaMA-13B-v1": "ziya-llama-13b-v1",
    "Ali-Tongyiqianwen": "tongyiqianwen",
    "360": "360",
    "CIIC-Zhigong": "zhigong",
    "ChatGLM2-6B": "chatglm2-6b",
    "Vicuna-33B": "Vicuna-33B",
    "InternLM-7B": "internlm-7b",
    "ChatGLM-130B": "chatglm",
    "TigerBot-180B": "tigerbot-180b",
    "AquilaChat-7b": "AquilaChat-7b",
    "BELLE-7B-2M": "belle-7b-2m",
}
README_CRITERIA = (
    "correctness",
    "explanation_correctness",
    "fluency",
    "accuracy",
    "logicality",
    "informativeness",
)
FULL = {
    "Correctness": 3,
    "Explanation Correctness": 2,
    "Accuracy": 5,
    "Informativeness": 3,
    "Fluency": 3,
    "Logicality": 3,
}


def _readme_table() -> dict[str, dict]:
    """The upstream README's ranking table: per model, (human, GPT-4) per criterion and total."""
    out = {}
    pair = re.compile(r"([\d.]+)\s*\(([\d.]+)\)")
    for line in (DATA / "UPSTREAM-README-en.md").read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 9 or cells[0] not in README_NAMES:
            continue
        values = [pair.search(c) for c in cells[1:7]] + [pair.search(cells[8])]
        out[README_NAMES[cells[0]]] = {
            "criteria": {
                k: (float(m.group(1)), float(m.group(2)))
                for k, m in zip(README_CRITERIA, values[:6], strict=True)
            },
            "total": (float(values[6].group(1)), float(values[6].group(2))),
        }
    return out


def _naive_human_totals() -> dict[str, float]:
    """LLMEval-2 total score of the released human scores, by hand: per subject, stars / full
    marks * 100, then the mean over the 12 subjects; scores as published (the 0s included)."""
    acc = defaultdict(lambda: [0, 0])
    for path in sorted((DATA / "results" / "human-score").glob("*.json")):
        subject = path.stem
        for rec in json.loads(path.read_text(encoding="utf-8")):
            for crit, value in rec["stars"].items():
                a = acc[(rec["llm_name"], subject)]
                a[0] += value
                a[1] += FULL[crit]
    per_model = defaultdict(list)
    for (model, _subject), (got, full) in acc.items():
        per_model[model].append(100 * got / full)
    return {m: sum(v) / len(v) for m, v in per_model.items()}


def test_llmeval2_gaps_are_the_published_shares_of_every_answer(llmeval2):
    gaps = llmeval2["tables"]["gaps"]

    def share(criterion, k):
        return float(one_row(gaps, criterion=criterion, k=str(float(k)))["share"])

    # Table 4 (subjective questions; 3520 answers).
    assert one_row(gaps, criterion="accuracy", k="2.0")["n_items"] == 3520
    assert round(100 * share("accuracy", 2), 2) == 37.05
    assert round(100 * share("accuracy", 4), 2) == 6.99
    assert round(100 * share("fluency", 2), 2) == 3.49
    assert round(100 * share("logicality", 2), 2) == 7.87
    assert round(100 * share("informativeness", 2), 2) == 9.97
    # Table 5 (objective questions; 6080 answers). The printed "Delta Correctness >= 3" cannot
    # happen on a 1-3 scale (the largest gap is 2); the printed 12.98 % is the share at >= 2,
    # which is what the paper's text says ("differences exceeding 2 points is 12.98 %").
    assert one_row(gaps, criterion="correctness", k="2.0")["n_items"] == 6080
    assert round(100 * share("correctness", 2), 2) == 12.98
    assert share("correctness", 2) == pytest.approx(789 / 6080, abs=1e-12)
    # "Delta Explanation >= 1" is printed as 24.98 %: the share with the 11 human explanation
    # scores of 0 (below the rubric's 1-2 range) kept as published, which the importer does
    # (flagged, never raised): 1519 / 6080. Raised to 1 they gave 1508 / 6080 = 24.80 %.
    assert share("explanation_correctness", 1) == pytest.approx(1519 / 6080, abs=1e-12)
    assert round(100 * share("explanation_correctness", 1), 2) == 24.98


def test_llmeval2_gpt4_scores_per_criterion_and_total_match_the_readme(llmeval2):
    # The README's GPT-4 scores (in brackets) per criterion and the total score, all 20 models.
    published = _readme_table()
    assert len(published) == 20
    stars = llmeval2["tables"]["leaderboard_star"]
    totals = llmeval2["tables"]["leaderboard_total"]

    def judge_mean(model, crit):
        return one_row(stars, rater_kind="judge", model=model, criterion=crit)["mean"]

    # In three rows of the README the bracketed per-criterion GPT-4 means do not belong to the
    # row's model: CIIC-Zhigong's row shows the data's Xunfei means and Ziya's row the data's
    # Zhigong means (Xunfei's printed values match no model). The totals of the same rows are
    # right, so this is a copy slip in the table, not a different formula; the test checks the
    # data's values where they were printed. Printed values are rounded half up (360's
    # informativeness 2.3125 is printed 2.313), hence the 0.0005 tolerance.
    misplaced = {"zhigong": "xunfei", "ziya-llama-13b-v1": "zhigong", "xunfei": None}
    for printed_as, row in published.items():
        model = misplaced.get(printed_as, printed_as)
        if model is None:
            continue
        for crit, (_human, gpt4) in row["criteria"].items():
            assert abs(judge_mean(model, crit) - gpt4) <= 0.0005 + 1e-9, (printed_as, crit)
    for model, row in published.items():
        got = one_row(totals, rater_kind="judge", model=model)["total"]
        assert round(got, 2) == pytest.approx(row["total"][1], abs=1e-9), model


def test_llmeval2_human_totals_are_the_released_scores_recomputed_by_hand(llmeval2):
    published = _readme_table()
    totals = llmeval2["tables"]["leaderboard_total"]
    # The printed human totals do not come out of the released human scores (GPT4: printed
    # 86.72, data 86.98; the largest difference is 0.35 points, Vicuna-33B); presumably the
    # table was made from an earlier or larger set of annotations. Assert what the data give,
    # recomputed by hand, and that it stays near the printed figures.
    naive = _naive_human_totals()
    for model, row in published.items():
        got = one_row(totals, rater_kind="human", model=model)["total"]
        assert got == pytest.approx(naive[model], abs=1e-6), model
        assert abs(got - row["total"][0]) < 0.5, model


def test_llmeval2_accuracy_within_sigma_is_the_exact_agreement_share_for_both(llmeval2):
    # docs/statistics.md ("Accuracy within sigma"): with one human panel score and one GPT-4 score
    # per answer, every within-sigma variant is "the two scores are equal", the same figure for
    # both: 18,803 of 26,240 (answer, criterion) judgements with the 22 zeros kept as given.
    # (The 0.7174 was measured when the importer raised the zeros to 1.)
    t = llmeval2["tables"]["accuracy_variants"]
    rows = t[t["mode"] == "star"]
    assert set(rows["n_judgements"]) == {26240}
    assert set(rows["n_accurate"]) == {18803}
    assert round(18803 / 26240, 4) == 0.7166
    assert ("humans_only", "humans") not in set(zip(rows["variant"], rows["group_by"], strict=True))
