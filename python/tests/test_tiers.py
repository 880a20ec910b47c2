"""The tiers (tiers.py) name every test module once, and the Django test modules skip
cleanly, at collection, where Django or its Tasks framework is missing (issue 27:
test_django_backend.py failed at collection without Django).

The collection runs in a subprocess whose ``sys.meta_path`` starts with a finder that
refuses the hidden packages, as a venv without them would (no database is used)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from helpers import NO_DJANGO, NO_TASKS, REPO
from tiers import QUICK, TIERS, tier_of

TESTS = Path(__file__).resolve().parent
# what is under python/tests but holds no test module: the apps the tests run, the Django project
NOT_TESTS = {"apps", "django_project", "lifecycle"}


def all_test_modules() -> list[str]:
    return sorted(p.relative_to(TESTS).as_posix() for p in TESTS.rglob("test_*.py")
                  if p.relative_to(TESTS).parts[0] not in NOT_TESTS)  # fmt: skip


def test_every_test_module_is_in_exactly_one_tier() -> None:
    modules = all_test_modules()
    assert "unit/test_dsn.py" in modules and "test_worker.py" in modules  # the walk finds them
    untiered = [m for m in modules if tier_of(m) is None]
    assert untiered == [], f"add these to python/tests/tiers.py: {untiered}"
    for module in modules:
        holders = [tier for tier, names in TIERS.items()
                   if module in names or any(n.endswith("/") and module.startswith(n) for n in names)]  # fmt: skip
        assert len(holders) == 1, f"{module} is in tiers {holders}"
    named = [n for names in TIERS.values() for n in names]
    assert len(named) == len(set(named))
    stale = [n for n in named if not (TESTS / n).exists()]
    assert stale == [], f"tiers.py names what is not there: {stale}"
    assert all(tier_of(m) == "integration" for m in QUICK)


def test_the_markers_are_the_tiers() -> None:
    out = subprocess.run([sys.executable, "-m", "pytest", "--markers"], cwd=REPO, capture_output=True, text=True,
                         timeout=120, check=False)  # fmt: skip
    for marker in [*TIERS, "quick"]:
        assert f"@pytest.mark.{marker}:" in out.stdout


HIDE = textwrap.dedent("""
    import sys

    HIDDEN = tuple(sys.argv[1].split(","))

    class Hidden:
        def find_spec(self, name, path=None, target=None):
            if name in HIDDEN or name.startswith(tuple(h + "." for h in HIDDEN)):
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, Hidden())
    import pytest

    sys.exit(pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", *sys.argv[2:]]))
""")


def collect_without(hidden: str, *paths: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", HIDE, hidden, *paths], cwd=REPO, capture_output=True, text=True,
                          timeout=300, check=False)  # fmt: skip


DJANGO_MODULES = sorted(p.name for p in TESTS.glob("test_django_*.py"))


def test_without_django_the_suite_collects_and_every_django_module_skips() -> None:
    out = collect_without("django,django_tasks", "python/tests")
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "error" not in out.stdout.lower().split("short test summary info")[-1]
    for module in DJANGO_MODULES:
        assert f"SKIPPED [1] python/tests/{module}" in out.stdout and NO_DJANGO in out.stdout, out.stdout[-3000:]
    assert "python/tests/test_worker.py::" in out.stdout  # the rest is collected


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="Django 6 (Python 3.12+) has django.tasks built in")
def test_without_the_tasks_backport_every_django_module_skips() -> None:
    out = collect_without("django_tasks", *(f"python/tests/{m}" for m in DJANGO_MODULES))
    assert out.returncode == 5, out.stdout[-3000:] + out.stderr[-3000:]  # no test collected, none failed
    for module in DJANGO_MODULES:
        assert f"SKIPPED [1] python/tests/{module}" in out.stdout, out.stdout[-3000:]
    assert NO_TASKS in out.stdout
