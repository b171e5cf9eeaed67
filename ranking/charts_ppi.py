"""The judge-assisted section's chart: 95% interval width against the human ratings spent,
human-only beside judge-assisted (PPI++). Same conventions as ``ranking.charts``."""

from __future__ import annotations

import pandas as pd
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from matplotlib import rc_context

from ranking.charts import _RC, PALETTE, _figure, _has, _svg

TITLES = {"star_mean": gettext_lazy("Mean stars (overall)"), "win_rate": gettext_lazy("Win rate")}


def width_curve(curve: pd.DataFrame) -> str | None:
    """One panel per statistic: mean interval width over the models as humans rate more items;
    the human-only line once, one judge-assisted line per judge."""
    if not _has(curve, "judge", "statistic", "n_human_ratings", "width_human", "width_ppi"):
        return None
    stats = [s for s in TITLES if s in set(curve["statistic"].astype(str))]
    if not stats:
        return None
    with rc_context(_RC):
        fig = _figure(6.4, 3.0 * len(stats))
        for k, stat in enumerate(stats):
            ax = fig.add_subplot(len(stats), 1, k + 1)
            c = curve[curve["statistic"].astype(str) == stat]
            judges = list(dict.fromkeys(c["judge"].astype(str)))
            first = c[c["judge"].astype(str) == judges[0]].sort_values("n_human_ratings")
            ax.plot(first["n_human_ratings"], first["width_human"], "o--", color="#656d76",
                    lw=1.2, label=_("humans only"))  # fmt: skip
            for j, judge in enumerate(judges):
                g = c[c["judge"].astype(str) == judge].sort_values("n_human_ratings")
                ax.plot(g["n_human_ratings"], g["width_ppi"], "o-", lw=1.4,
                        color=PALETTE[j % len(PALETTE)], label=_("humans + %(judge)s") % {"judge": judge})  # fmt: skip
            ax.set_xlabel(_("human ratings spent"))
            # xgettext:no-python-format
            ax.set_ylabel(_("mean 95% interval width"))
            ax.set_title(
                _("%(statistic)s: interval width against human ratings")
                % {"statistic": TITLES[stat]}
            )
            ax.set_ylim(bottom=0)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7, frameon=False)
    return _svg(fig)
