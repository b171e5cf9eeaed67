"""The 403, 404 and 500 pages: in the site's layout (403, 404) and in the visitor's language, not
Django's bare English "Forbidden" / "Not Found" pages."""

from __future__ import annotations

from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import translation


def test_an_annotator_on_an_organizer_page_gets_a_403_in_the_sites_layout(annotator_client):
    english = annotator_client.get(reverse("organize:studies"), HTTP_ACCEPT_LANGUAGE="en")
    assert english.status_code == 403
    html = english.content.decode()
    assert "<h1>Not allowed</h1>" in html and "lang-switch" in html
    assert f'href="{reverse("home")}"' in html
    chinese = annotator_client.get(reverse("organize:studies"), HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert chinese.status_code == 403 and "Not allowed" not in chinese.content.decode()


def test_an_unknown_address_gets_a_404_in_the_visitors_language(client, db):
    english = client.get("/no-such-page/", HTTP_ACCEPT_LANGUAGE="en")
    assert english.status_code == 404
    assert "<h1>Page not found</h1>" in english.content.decode()
    chinese = client.get("/no-such-page/", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "Page not found" not in chinese and "lang-switch" in chinese


def test_the_500_page_stands_alone_and_follows_the_active_language():
    """Django renders 500.html with no request and no context: no layout, only the message."""
    with translation.override("zh-hans"):
        html = render_to_string("500.html")
    assert '<html lang="zh-hans">' in html and "Something went wrong" not in html
