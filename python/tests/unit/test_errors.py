"""pyconductor.errors: the SQLSTATE -> class table (no database)."""

from __future__ import annotations

import psycopg
import pytest

import pyconductor
from pyconductor import errors
from pyconductor.errors import ConductorError, error_class, mapped_errors, translate

EXPECTED = {
    "QC101": "InvalidKind", "QC102": "InvalidPayload", "QC103": "PayloadTooLarge", "QC104": "InvalidQueue",
    "QC105": "InvalidStatus", "QC106": "InvalidArgument", "QC201": "LeaseLost", "QC202": "TaskCancelled",
    "QC203": "NotFound", "QC204": "InvalidState", "QC205": "DedupeConflict", "QC206": "AlreadyExists", "QC209": "EmptyFilter",
    "QC210": "MatchesMoreThanExpected", "QC123": "InvalidCodeVersions", "QC211": "ReplayMismatch",
    "QC301": "InvalidCron",
    "QC302": "InvalidTimezone",
    "QC130": "UnknownStep", "QC131": "InvalidUpdateName", "QC217": "RunFinished", "QC218": "NotThisRunsUpdate",
}  # fmt: skip


@pytest.mark.parametrize(("code", "name"), sorted(EXPECTED.items()))
def test_every_sqlstate_has_its_class(code: str, name: str) -> None:
    cls = error_class(code)
    assert cls is getattr(errors, name) and cls is getattr(pyconductor, name)
    assert issubclass(cls, ConductorError) and cls.sqlstate == code
    assert name in pyconductor.__all__


def test_unregistered_conductor_codes_fall_back_to_the_root() -> None:
    assert error_class("QC999") is ConductorError
    assert error_class("23505") is None
    assert error_class(None) is None


def test_task_cancelled_error_is_the_qc202_class() -> None:
    assert pyconductor.TaskCancelledError is pyconductor.TaskCancelled


def test_translate_keeps_foreign_errors() -> None:
    exc = psycopg.OperationalError("connection refused")
    assert translate(exc) is exc
    with pytest.raises(psycopg.OperationalError), mapped_errors():
        raise exc


def test_error_keeps_its_fields() -> None:
    err = errors.LeaseLost("attempt 3 no longer holds task 1", detail="d", hint="h")
    assert (err.sqlstate, err.message, err.detail, err.hint, str(err)) == (
        "QC201", "attempt 3 no longer holds task 1", "d", "h", "attempt 3 no longer holds task 1",
    )  # fmt: skip
    assert ConductorError("x", sqlstate="QC999").sqlstate == "QC999"
