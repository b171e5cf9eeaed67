"""Chinese Markdown: emphasis next to full-width punctuation renders bold, code and `***`
placeholders stay as written, raw HTML stays inert, and the `lang` guess of a text."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from django.conf import settings
from markdown_it import MarkdownIt

from annotation.markdown import render_document, render_markdown
from annotation.markdown_cjk import text_lang

SHARED = Path(settings.BASE_DIR).parent / "shared" / "data"
ALPACA = SHARED / "chinese-alpaca-eval" / "model_outputs" / "gpt-4-0613.jsonl"
ALIGNBENCH = SHARED / "alignbench" / "data" / "data_v1.1_release.jsonl"
PLAIN = MarkdownIt("commonmark").enable(["table", "strikethrough"])

# `1. **状态（State）**：表示...` in the data; LLMs as often put the colon inside the bold.
BOLD_THEN_COLON = re.compile(r"\*\*([^*\n]{1,30})\*\*：(?=[\u4e00-\u9fff])")


def _shared_lines(path: Path, field: str) -> list[str]:
    if not path.exists():
        pytest.skip(f"{path} is missing (../shared/data)")
    with path.open(encoding="utf-8") as f:
        return [json.loads(line)[field] for line in f if line.strip()]


def test_bold_ending_in_a_full_width_colon_renders_bold():
    html = render_markdown("**答案：**42 是正确的")
    assert "<strong>答案：</strong>42" in html
    assert "**" not in html
    # Plain CommonMark leaves the asterisks: the case the issue reports.
    assert "**答案：**" in PLAIN.render("**答案：**后面")
    assert render_markdown("**答案：**后面") == "<p><strong>答案：</strong>后面</p>\n"


def test_real_answers_with_the_colon_moved_inside_the_bold_render_without_asterisks():
    answers = [a for a in _shared_lines(ALPACA, "response") if BOLD_THEN_COLON.search(a)]
    assert len(answers) >= 5
    for answer in answers:
        moved = BOLD_THEN_COLON.sub(r"**\1：**", answer)
        assert "**" in PLAIN.render(moved)  # CommonMark alone fails on every one
        html = render_markdown(moved)
        labels = BOLD_THEN_COLON.findall(answer)
        for label in labels:
            assert f"<strong>{label}：</strong>" in html
        assert "**" not in re.sub(r"<code>.*?</code>", "", html, flags=re.S)
        # And as written in the data it renders as before.
        assert render_markdown(answer).count("<strong>") == PLAIN.render(answer).count("<strong>")


def test_triple_asterisk_placeholders_in_a_real_question_stay_literal():
    question = next(q for q in _shared_lines(ALIGNBENCH, "question") if "研发***" in q)
    html = render_markdown(question)
    assert "研发***" in html and "提升***" in html
    assert "<em>" not in html and "<strong>" not in html


def test_latin_emphasis_and_code_keep_commonmark_behaviour():
    assert render_markdown("snake_case_name and **x**y") == PLAIN.render(
        "snake_case_name and **x**y"
    )
    assert "<code>**答案：**x</code>" in render_markdown("`**答案：**x`")
    assert "**答案：**" in render_markdown("```\n**答案：**后\n```")
    assert render_markdown("~~删除：~~后") == "<p><s>删除：</s>后</p>\n"


def test_a_line_break_in_an_answer_stays_a_line_break():
    """A poem's lines, or definitions one a line without Markdown markers, are not run into one
    paragraph ("第一行第二行"): every line break of a question or answer is kept."""
    assert render_markdown("第一行\n第二行") == "<p>第一行<br>\n第二行</p>\n"
    assert render_markdown("first\nsecond") == "<p>first<br>\nsecond</p>\n"
    assert (
        render_markdown("- 林俊杰\n- 陈奕迅") == "<ul>\n<li>林俊杰</li>\n<li>陈奕迅</li>\n</ul>\n"
    )


def test_soft_line_break_between_chinese_characters_adds_no_space_in_a_document():
    assert render_document("第一行\n第二行") == "<p>第一行第二行</p>\n"
    assert render_document("first\nsecond") == "<p>first\nsecond</p>\n"


def test_raw_html_inside_chinese_emphasis_stays_inert():
    html = render_markdown("**答案：**<script>alert(1)</script>\x00后")
    assert "<script>" not in html
    assert "&lt;script&gt;" in html
    assert "<strong>答案：</strong>" in html


@pytest.mark.parametrize(
    ("text", "lang"),
    [
        ("有几位著名的演员在职业生涯初期是从演京剧开始的", "zh"),
        ("The answer is 42, and here is why.", "en"),
        ("```python\ndef f(x):\n    return x  # 中\n```", "en"),
        ("用 Python 写一个函数 def f(x)", "zh"),
        ("これは日本語の文章です", "ja"),
        ("", "en"),
        (None, "en"),
        ("٣٤٥ ²", "en"),
    ],
)
def test_text_lang_guesses_the_script(text, lang):
    assert text_lang(text) == lang
