"""Markdown that reads Chinese: emphasis next to full-width punctuation, and a cheap language guess.

CommonMark decides whether `**` may open or close emphasis from the characters on either side
("flanking" rules). Written for languages that separate words with spaces, the rules refuse
`**答案：**后面` : the closing `**` follows the full-width colon (punctuation) and precedes a
letter, so it is not right-flanking and the asterisks stay on the page. Chinese answers from LLMs
are full of this.

The fix follows the CommonMark "CJK-friendly" draft (tats-u/markdown-cjk-friendly): a CJK
character next to the delimiter run counts as punctuation where that lets emphasis form, and not
where it would stop it. Runs with no CJK neighbour keep the exact CommonMark result. The one
Python plugin on the registry (mdit-py-cjk-friendly) needs markdown-it-py < 4 and patches the
parser class for every user, so this module applies the same rule to our parser only: it wraps
the emphasis and strikethrough rules and gives their state a CJK-aware `scanDelims`. Code spans
and blocks are untouched (those rules never call it); runs of three or more markers are too. Where soft line breaks are not kept
(`breaks` off: the rendered docs), it drops the one between two CJK characters, which a browser
would otherwise show as a stray space.
"""

from __future__ import annotations

import re
from types import MethodType

from markdown_it import MarkdownIt
from markdown_it.common.utils import isMdAsciiPunct, isPunctChar, isWhiteSpace
from markdown_it.rules_inline import emphasis, strikethrough
from markdown_it.rules_inline.state_inline import Scanned, StateInline

# Han ideographs (with extension A, compatibility and extension B+), kana, hangul, CJK symbols
# and punctuation, full-width forms.
_CJK = "\u3000-\u303f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef\U00020000-\U0002fa1f"
_CJK_CHAR = re.compile(f"[{_CJK}]")
_KANA = re.compile("[\u3040-\u30ff]")
_HANGUL = re.compile("[\uac00-\ud7af]")
_LATIN = re.compile("[A-Za-z\u00c0-\u024f]")


def is_cjk(char: str) -> bool:
    return bool(char) and _CJK_CHAR.match(char) is not None


def _punct(char: str) -> bool:
    return isMdAsciiPunct(ord(char)) or isPunctChar(char)


def _scan_delims(self: StateInline, start: int, canSplitWord: bool) -> Scanned:  # noqa: N803
    scanned = StateInline.scanDelims(self, start, canSplitWord)
    # Runs of three or more are left to CommonMark: Chinese text writes `***` for a redacted or
    # placeholder value (`研发***，提升***`, `邮箱：***`, both in ../shared/data).
    if (scanned.can_open and scanned.can_close) or scanned.length > 2:
        return scanned
    last = self.src[start - 1] if start > 0 else " "
    nxt_pos = start + scanned.length
    nxt = self.src[nxt_pos] if nxt_pos < self.posMax else " "
    if not (is_cjk(last) or is_cjk(nxt)):
        return scanned  # exactly CommonMark
    # A CJK neighbour helps emphasis form ("allow") and never stops it ("block").
    last_block, next_block = _punct(last) and not is_cjk(last), _punct(nxt) and not is_cjk(nxt)
    last_allow, next_allow = is_cjk(last) or _punct(last), is_cjk(nxt) or _punct(nxt)
    last_ws, next_ws = isWhiteSpace(ord(last)), isWhiteSpace(ord(nxt))
    left = not next_ws and (not next_block or last_ws or last_allow)
    right = not last_ws and (not last_block or next_ws or next_allow)
    if canSplitWord:
        return Scanned(left, right, scanned.length)
    return Scanned(
        left and (not right or last_allow), right and (not left or next_allow), scanned.length
    )


def _cjk_state(state: StateInline) -> StateInline:
    if "scanDelims" not in state.__dict__:
        state.scanDelims = MethodType(_scan_delims, state)  # type: ignore[method-assign]
    return state


def _emphasis(state: StateInline, silent: bool) -> bool:
    return emphasis.tokenize(_cjk_state(state), silent)


def _strikethrough(state: StateInline, silent: bool) -> bool:
    return strikethrough.tokenize(_cjk_state(state), silent)


def _softbreak(renderer, tokens, idx, options, env) -> str:
    if options.breaks:  # every line break is kept: nothing for a browser to turn into a space
        return "<br>\n"
    before = tokens[idx - 1].content[-1:] if idx > 0 else ""
    after = tokens[idx + 1].content[:1] if idx + 1 < len(tokens) else ""
    if is_cjk(before) and is_cjk(after):
        return ""
    return "\n"


def cjk_friendly(md: MarkdownIt) -> None:
    """Plugin: `MarkdownIt(...).use(cjk_friendly)` after enabling strikethrough."""
    md.inline.ruler.at("emphasis", _emphasis)
    if "strikethrough" in [r.name for r in md.inline.ruler.__rules__]:
        md.inline.ruler.at("strikethrough", _strikethrough)
    md.add_render_rule("softbreak", _softbreak)


def text_lang(text: str | None, *, sample: int = 400) -> str:
    """A cheap guess at the language of a text for its `lang` attribute: "ja" when kana show,
    "ko" for hangul, "zh" when CJK characters outnumber Latin letters in the first `sample`
    characters, else "en". Only the script matters here: it picks fonts, line breaking and the
    screen reader's voice."""
    head = (text or "")[:sample]
    cjk = len(_CJK_CHAR.findall(head))
    latin = len(_LATIN.findall(head))
    if cjk == 0 or cjk < latin / 4:
        # Latin words are ~5 letters to a CJK character's one word.
        return "en"
    if _KANA.search(head):
        return "ja"
    if _HANGUL.search(head) and not re.search("[\u4e00-\u9fff]", head):
        return "ko"
    return "zh"
