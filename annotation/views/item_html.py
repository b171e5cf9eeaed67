"""The item fragment that htmx swaps in after each rating, written out by hand.

The same HTML as the `item` partial of annotation/annotate.html (which still renders the full
page): Django's template engine spent about a third of a submit+next's CPU walking some 70 nodes
for it. Everything that comes from a study, a question, an answer or a translation is escaped
here as the template escapes it: plain text through html.escape (what Django's escape does),
Markdown only as render_markdown's sanitised output. tests/annotation/test_item_html.py holds
the two renderings to the same bytes; a change to the partial must be made here too.
"""

from __future__ import annotations

from html import escape

from django.contrib.messages import get_messages
from django.http import HttpRequest
from django.middleware.csrf import get_token
from django.utils.safestring import SafeData

from annotation.markdown import render_answer, render_markdown
from annotation.markdown_cjk import text_lang

_SWAP = 'hx-target="#annotate" hx-swap="outerHTML show:window:top"'


def _e(value: object) -> str:
    """What {{ value }} prints with autoescape on and localize off."""
    text = str(value)
    return text if isinstance(text, SafeData) else escape(text)


def _md(text: str | None) -> str:
    return str(render_markdown(text))


def _lang(text: str | None) -> str:
    return escape(text_lang(text))


def item_fragment(request: HttpRequest, c: dict) -> str:
    """The `item` partial for item_context()'s context c, as the template renders it."""
    csrf = f'<input type="hidden" name="csrfmiddlewaretoken" value="{escape(get_token(request))}">'
    study = c["study"]
    body = _pairwise(c) if study.mode == "pairwise" else _star(c)
    return "".join(
        [_head(c, csrf), _progress(c), _notes(request, c), body, _actions(c), "\n</form>\n</div>\n"]
    )


def _head(c: dict, csrf: str) -> str:
    study, t, urls = c["study"], c["t"], c["urls"]
    mode = _e(study.mode)
    lease = ""
    if not c["editing"]:
        lease = f' data-lease="{_e(urls["lease"])}" data-lease-seconds="{_e(study.reservation_timeout)}"'
    skip, rate = _e(urls["skip"]), _e(urls["rate"])
    return (
        f'\n<div id="annotate" class="annotate mode-{mode}" data-mode="{mode}"'
        f' data-assignment="{_e(c["assignment"].public_id)}"{lease}'
        f'\n     data-msg-error="{_e(t["msg_error"])}"'
        f'\n     data-msg-offline="{_e(t["msg_offline"])}">'
        f'\n<form id="skip-form" method="post" action="{skip}"'
        f'\n      hx-post="{skip}" {_SWAP}>{csrf}</form>'
        '\n<form id="rate-form" method="post"'
        f'\n      action="{rate}"'
        f'\n      hx-post="{rate}" {_SWAP}>'
        f"\n  {csrf}"
        '\n  <input type="hidden" name="active_ms" value="" data-active-ms>'
    )


def _progress(c: dict) -> str:
    p, t = c["progress"], c["t"]
    percent = _e(p.percent)
    if p.quota:
        # The template's line break before its {% else %} belongs to this branch.
        text = t["done_quota"] % {"done": _e(p.done), "quota": _e(p.quota)} + "\n      "
    else:
        line = t["done_remaining_one"] if p.remaining == 1 else t["done_remaining"]
        text = line % {"done": _e(p.done), "remaining": _e(p.remaining)}
    return (
        '\n  <div class="progress-row">'
        f'\n    <div class="progress" role="progressbar" aria-label="{_e(t["progress"])}"'
        f' aria-valuemin="0" aria-valuemax="100" aria-valuenow="{percent}"'
        f' aria-describedby="progress-text"><span style="width: {percent}%"></span></div>'
        '\n    <span class="progress-text" id="progress-text" data-progress>'
        f"\n      {text}"
        "\n    </span>"
        "\n  </div>"
    )


def _notes(request: HttpRequest, c: dict) -> str:
    """Messages, guidelines, the editing note, errors and the question."""
    t, study = c["t"], c["study"]
    out = ["\n  "]
    messages = get_messages(request)
    if messages:
        items = "".join(f'<li class="{_e(m.tags)}">{_e(m)}</li>' for m in messages)
        out.append(f'<ul class="messages">{items}</ul>')
    out.append("\n  ")
    if study.instructions:
        out.append(
            '<details class="guidelines card" data-guidelines>'
            f"<summary>{_e(t['guidelines'])}</summary>"
            f'<div class="md">{_md(study.instructions)}</div></details>'
        )
    out.append("\n  ")
    if c["editing"]:
        out.append(f'<p class="note editing">{_e(t["editing"])}</p>')
    out.append("\n  ")
    if c["errors"]:
        items = "".join(f"<li>{_e(e)}</li>" for e in c["errors"])
        out.append(f'<ul class="errors" role="alert">{items}</ul>')
    q = c["question"]
    out.append(
        '\n\n  <section class="question card">'
        f'\n    <h2 class="label">{_e(t["question"])}</h2>'
        f'\n    <div class="md" lang="{_lang(q)}">{_md(q)}</div>'
        "\n  </section>\n\n  "
    )
    return "".join(out)


def _answer(side: str, label: str, text: str, empty: str) -> str:
    return (
        f'<section class="card answer-card"><h2 class="label" id="answer-{side}-label">{label}'
        f'</h2><div class="answer md" data-answer="{side}" lang="{_lang(text)}" tabindex="0"'
        f' role="region" aria-labelledby="answer-{side}-label">{render_answer(text, empty)}'
        "</div></section>"
    )


def _reference(c: dict) -> str:
    ref = c["reference"]
    if not ref:
        return ""
    return (
        f'<section class="card reference"><h2 class="label">{_e(c["t"]["reference"])}</h2>'
        f'<div class="md" lang="{_lang(ref)}">{_md(ref)}</div></section>'
    )


def _pairwise(c: dict) -> str:
    t, answers, choice = c["t"], c["answers"], c["choice"]
    out = [
        '\n  <div class="side-by-side answers">',
        f"\n    {_answer('left', _e(t['left']), answers['left'], t['empty_answer'])}",
        f"\n    {_answer('right', _e(t['right']), answers['right'], t['empty_answer'])}",
        f"\n  </div>\n  {_reference(c)}",
        '\n  <fieldset class="choices card">',
        f"\n    <legend>{_e(t['which'])}</legend>\n    ",
    ]
    for n, (value, label) in enumerate(c["choices"], 1):
        checked = "checked" if choice == value else ""
        out.append(
            f'\n    <label class="choice"><input type="radio" name="choice" value="{_e(value)}"'
            f' {checked} data-key="{n}"><span><kbd aria-hidden="true">{n}</kbd> {_e(label)}'
            "</span></label>\n    "
        )
    out.append("\n  </fieldset>\n  ")
    return "".join(out)


def _star(c: dict) -> str:
    t = c["t"]
    out = [
        '\n  <div class="star-layout">\n    <div class="left-col">',
        f"\n      {_answer('single', _e(t['answer']), c['answers']['single'], t['empty_answer'])}",
        f"\n      {_reference(c)}",
        '\n    </div>\n    <div class="card criteria">',
        f'\n      <h2 class="label">{_e(t["fine"])}</h2>',
        f'\n      <p class="muted small">{_e(t["per_criterion"])}</p>\n      ',
    ]
    for k, row in enumerate(c["criteria"]):
        out.append(_criterion(row, first=k == 0))
    out.append("\n    </div>\n  </div>\n  ")
    return "".join(out)


def _criterion(row: dict, *, first: bool) -> str:
    key, stars = _e(row["key"]), row["stars"]
    help_text = "; ".join(f"{_e(s['value'])}{'★' * int(s['value'])} {_e(s['desc'])}" for s in stars)
    out = [
        f'\n      <fieldset class="criterion{" current" if first else ""}" data-criterion="{key}">',
        f"\n        <legend>{_e(row['label'])}</legend>",
        "\n        " + (f'<p class="star-help">{help_text}</p>' if row["described"] else ""),
        '\n        <div class="stars">\n          ',
    ]
    for s in stars:
        value, desc = _e(s["value"]), _e(s["desc"])
        checked = "checked" if row["selected"] == s["value"] else ""
        # A scale from 0 shows its 0 as "0", not as a first star.
        zero, glyph = (" zero", "0") if s["value"] == 0 else ("", "★")
        title = f"{value} — {desc}" if desc else value  # a star without a meaning: its number
        out.append(
            f'\n          <label class="star{zero}" title="{title}"><input type="radio"'
            f' name="c_{key}" value="{value}" {checked}><span aria-hidden="true">{glyph}</span>'
            f'<span class="sr-only">{value} {desc}</span></label>\n          '
        )
    out.append(
        '\n          <span class="star-desc" data-star-desc></span>\n        </div>'
        "\n      </fieldset>\n      "
    )
    return "".join(out)


def _actions(c: dict) -> str:
    t, urls = c["t"], c["urls"]
    submit = _e(t["save_change"] if c["editing"] else t["submit"])
    previous = _e(urls["previous"])
    if c["study"].mode == "pairwise":
        keys = _e(t["keys_pairwise"])
    else:
        ten = f" {_e(t['keys_ten'])}" if c["zero_is_ten"] else ""
        keys = f"{_e(t['keys_star'])}{ten} {_e(t['keys_arrows'])}"
    return (
        '\n\n  <div class="actions">'
        f'\n    <button type="submit" class="primary" data-action="submit">{submit}</button>'
        f'\n    <a class="button" data-action="previous" href="{previous}" hx-get="{previous}"'
        f" {_SWAP}>{_e(t['previous'])}</a>"
        '\n    <button type="submit" class="button" data-action="skip" form="skip-form">'
        f"{_e(t['skip'])}</button>"
        "\n  </div>"
        f'\n  <p class="muted small shortcuts">{keys}</p>'
    )
