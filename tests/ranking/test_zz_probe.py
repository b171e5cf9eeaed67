import pytest
from django.urls import reverse
pytestmark = pytest.mark.django_db

def test_probe(organizer_client, star_study):
    pk = star_study.study.pk
    urls = [reverse("ranking:report-charts", args=[pk]), reverse("ranking:report", args=[pk]),
            reverse("ranking:report-download", args=[pk, "json"]), reverse("ranking:api-report", args=[pk])]
    cases = [{"end": "9999-12-31"}, {"start": "9999-12-31"}, {"start": "5000-01-01"}, {"end": "2262-04-12"},
             {"end": "1677-09-21"}, {"start": "0001-01-01"}, {"end": "0001-01-01"}, {"start": "0001-01-01", "end": "9999-12-31"}]
    for q in cases:
        for u in urls:
            r = organizer_client.get(u, q)
            print("RES", u[-14:], q, r.status_code, r.content[:80] if r.status_code != 200 else "")
    for q in cases:
        q2 = {f"s1-{k}": v for k, v in q.items()}
        q2["s1-study"] = pk
        for u in (reverse("ranking:compare"), reverse("ranking:api-compare")):
            r = organizer_client.get(u, q2)
            print("RES", u, q2, r.status_code, r.content[:80] if r.status_code != 200 else "")
