from __future__ import annotations

from django.conf import settings
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from annotation.views import home as views_home
from config.login import LimitedAdminAuthenticationForm, LoginView

# The admin's sign-in counts failed attempts per address like the login page (config/login.py).
admin.site.login_form = LimitedAdminAuthenticationForm

urlpatterns = [
    path("", views_home.home, name="home"),
    path("accounts/login/", LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("i18n/", include("django.conf.urls.i18n")),
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    # Each app owns its own URL module (pages and API), mounted here once.
    path("", include("annotation.urls")),
    path("", include("evaluation.urls")),
    path("", include("ranking.urls")),
]

if settings.DEBUG:
    from django.contrib.staticfiles.urls import staticfiles_urlpatterns

    urlpatterns += staticfiles_urlpatterns()
