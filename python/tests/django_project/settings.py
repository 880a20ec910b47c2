"""Settings for ``manage.py``: the database is $CONDUCTOR_DJANGO_DSN, sessions named
$CONDUCTOR_DJANGO_APPNAME (default django_project)."""

import os

from django_project.config import settings_for

globals().update(settings_for(os.environ["CONDUCTOR_DJANGO_DSN"],
                              os.environ.get("CONDUCTOR_DJANGO_APPNAME", "django_project")))  # fmt: skip
