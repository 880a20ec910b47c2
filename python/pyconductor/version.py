"""The release of this package, the one place it is written.

The build reads it (pyproject.toml's ``[tool.hatch.version]``: the wheel's
metadata), and so do ``pyconductor.__version__``, ``pyconductor --version``
and the version a worker registers (``pyconductor status`` lists it).

It follows CHANGELOG.md (python/tests/test_wheel.py checks): while the newest
heading there is ``## X.Y.Z (unreleased)``, this is a pre-release of X.Y.Z
(``X.Y.Z.devN``, ``aN``, ``bN`` or ``rcN``), so a build of the work in
progress never claims an earlier release's number; a release commit makes
the heading ``## X.Y.Z`` and this ``"X.Y.Z"``.
"""

__version__ = "0.3.0.dev0"
