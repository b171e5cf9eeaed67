"""A dataset's LLMs with near-duplicate names flagged (GPT4 / GPT4.0 / gpt-4), and merging one
into another after a confirmation page. An organizer may look at the datasets they may read
(another organizer's dataset is a 404); only the dataset's owner may merge
(``annotation.catalogue.llm_merge`` checks it)."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.http import require_GET, require_http_methods

from annotation.catalogue import can_edit_dataset, dataset_llms, duplicate_groups, llm_merge
from annotation.models import LLM, Dataset, Question
from annotation.permissions import datasets_visible, organizer_required


@organizer_required
@require_GET
def dataset_llm_list(request: HttpRequest, dataset_id: int) -> HttpResponse:
    dataset = get_object_or_404(datasets_visible(request.user), pk=dataset_id)
    llms = dataset_llms(dataset)
    ids = dict(LLM.objects.filter(name__in=[c.value for c in llms]).values_list("name", "pk"))
    groups = [[{"name": c.value, "count": c.count, "pk": ids[c.value]} for c in g]
              for g in duplicate_groups(llms)]  # fmt: skip
    context = {
        "dataset": dataset,
        "llms": llms,
        "groups": groups,
        "can_edit": can_edit_dataset(request.user, dataset),
    }
    return render(request, "annotation/organizer/dataset_llms.html", context)


def _pick(request: HttpRequest, dataset: Dataset, key: str) -> LLM:
    raw = (request.POST if request.method == "POST" else request.GET).get(key, "")
    if not raw.isascii() or not raw.isdigit() or len(raw) > 18:
        raise ValidationError(_("Choose the LLMs to merge."))
    llm = LLM.objects.filter(pk=int(raw), responses__question__dataset=dataset).first()
    if llm is None:
        raise ValidationError(_("LLM %(id)s has no answers in this dataset.") % {"id": raw})
    return llm


@organizer_required
@require_http_methods(["GET", "POST"])
def dataset_llm_merge(request: HttpRequest, dataset_id: int) -> HttpResponse:
    """GET: what the merge will do, and a form. POST with ``confirm=merge``: merge."""
    dataset = get_object_or_404(datasets_visible(request.user), pk=dataset_id)
    try:
        source, target = _pick(request, dataset, "source"), _pick(request, dataset, "target")
    except ValidationError as e:
        messages.error(request, " ".join(e.messages))
        return redirect("organize:dataset_llms", dataset_id=dataset.pk)
    if request.method == "POST" and request.POST.get("confirm") == "merge":
        try:
            moved = llm_merge(dataset=dataset, source=source, target=target, user=request.user)
        except ValidationError as e:
            messages.error(request, " ".join(e.messages))
        else:
            messages.success(
                request,
                ngettext(
                    "%(n)d answer moved from %(source)s to %(target)s.",
                    "%(n)d answers moved from %(source)s to %(target)s.",
                    moved,
                )
                % {"n": moved, "source": source.name, "target": target.name},
            )
        return redirect("organize:dataset_llms", dataset_id=dataset.pk)
    context = {
        "dataset": dataset,
        "source": source,
        "target": target,
        "moving": source.responses.filter(question__dataset=dataset).count(),
        "clashes": Question.objects.filter(dataset=dataset, responses__llm=source)
        .filter(responses__llm=target)
        .count(),
        "can_edit": can_edit_dataset(request.user, dataset),
    }
    return render(request, "annotation/organizer/dataset_llm_merge.html", context)
