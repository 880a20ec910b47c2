"""A Django project for the tests of pyconductor.contrib.django (test_django_*.py).

The database comes from $CONDUCTOR_DJANGO_DSN (a libpq URL), so one project
serves every test database: ``manage.py`` subprocesses read it from their
environment, and the tests' own process configures Django through
:mod:`django_project.harness` instead of DJANGO_SETTINGS_MODULE, so importing
the test modules changes nothing for the other tests.
"""
