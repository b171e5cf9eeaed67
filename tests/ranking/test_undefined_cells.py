"""An undefined figure on the report page is marked and explained, not an empty cell."""

from __future__ import annotations

import pandas as pd
from django.template.loader import render_to_string
from django.utils import translation

from ranking.presenters import table


def _html() -> str:
    df = pd.DataFrame({"model": ["m1", "m2"], "kappa": [0.5, float("nan")]})
    return render_to_string("ranking/_table.html", {"t": table(df, "cohen_pairs")})


def test_an_undefined_number_is_a_dash_with_a_reason():
    html = _html()
    assert '<td class="num">0.5</td>' in html
    assert '<td class="num undefined" title="Undefined for these ratings, or no data' in html
    assert html.count("undefined") == 1  # one cell; the defined one is as before


def test_the_reason_is_translated():
    with translation.override("zh-hans"):
        html = _html()
    assert 'class="num undefined" title="Undefined' not in html
