#!/usr/bin/env python
"""manage.py of the test project: python/tests is the import root (django_project.*)."""

import os
import sys
from pathlib import Path

if __name__ == "__main__":
    sys.path[0] = str(Path(__file__).resolve().parent.parent)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "django_project.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)
