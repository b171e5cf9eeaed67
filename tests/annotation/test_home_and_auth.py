from __future__ import annotations

from annotation.permissions import is_organizer


def test_home_page_renders_for_anonymous_visitors(client, db):
    response = client.get("/")
    assert response.status_code == 200
    assert b"Log in" in response.content


def test_pages_name_an_inline_icon_so_browsers_ask_for_no_missing_favicon(client, db):
    # Without it every first page view logs a 404 for /favicon.ico in the browser's console.
    assert client.get("/favicon.ico").status_code == 404
    for url in ("/", "/accounts/login/"):
        assert b'<link rel="icon" href="data:,">' in client.get(url).content


def test_home_page_lists_an_organizers_own_studies_only(
    client, organizer, small_dataset, star_rubric
):
    from annotation.services import study_create

    study_create(
        name="Alice study", dataset=small_dataset, mode="star", rubric=star_rubric, owner=organizer
    )
    client.force_login(organizer)
    assert b"Alice study" in client.get("/").content


def test_organizer_rights_need_staff_or_the_group(organizer, annotator_user, outsider):
    assert is_organizer(organizer)
    assert not is_organizer(annotator_user)
    assert not is_organizer(outsider)


def test_api_schema_is_served_and_docs_page_uses_no_cdn(client, db):
    schema = client.get("/api/schema/")
    assert schema.status_code == 200
    docs = client.get("/api/docs/")
    assert docs.status_code == 200
    assert b"cdn" not in docs.content.lower()


def test_the_admin_link_is_shown_only_to_staff(client, organizer):
    # An organizer by group alone followed it to "not authorized to access this page".
    client.force_login(organizer)
    assert b'href="/admin/"' not in client.get("/").content
    organizer.is_staff = True
    organizer.save(update_fields=["is_staff"])
    assert b'href="/admin/"' in client.get("/").content
