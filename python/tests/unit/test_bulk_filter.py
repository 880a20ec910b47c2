"""The dashboard's bulk filter (issue 29): what /runs' form and the confirmation's fields say,
read back as the same filter; times in UTC unless they name an offset; every value escaped
when the filter is put in words."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

# the pages need the dashboard extra, which the other Pythons' venvs do not install
pytest.importorskip("starlette", reason="the dashboard extra is not installed (pip install 'conductor-pg[dashboard]')")

from pyconductor.web.pages import bulk_query, bulk_words, parse_bulk
from pyconductor.web.reads import BulkFilter


def test_a_filter_reads_back_from_its_own_query() -> None:
    bulk = BulkFilter(status="failed", kind="mail.send", queue="mail", time_of="finished",
                      start=datetime(2026, 12, 6, 4, 0, 0, 123456, tzinfo=UTC),
                      end=datetime(2026, 12, 6, 5, 0, tzinfo=UTC), error="Timeout")  # fmt: skip
    query = bulk_query(bulk)
    assert query["from"] == "2026-12-06 04:00:00.123456Z" and query["until"] == "2026-12-06 05:00:00Z"
    assert parse_bulk({k: v for k, v in query.items() if v is not None}) == bulk


def test_times_are_utc_unless_they_name_an_offset() -> None:
    assert parse_bulk({"from": "2026-12-06 04:00"}).start == datetime(2026, 12, 6, 4, 0, tzinfo=UTC)
    plus_two = parse_bulk({"until": "2026-12-06T06:00+02:00"}).end
    assert plus_two == datetime(2026, 12, 6, 6, 0, tzinfo=timezone(timedelta(hours=2)))
    assert bulk_query(parse_bulk({"until": "2026-12-06T06:00+02:00"}))["until"] == "2026-12-06 04:00:00Z"


@pytest.mark.parametrize(
    ("params", "says"),
    [({"from": "yesterday"}, "from is a time"), ({"until": "2026-13-01"}, "until is a time"),
     ({"status": "done"}, "unknown status 'done'"), ({"time_of": "started"}, "time_of is one of")],
)  # fmt: skip
def test_a_bad_field_is_refused_saying_which(params: dict[str, str], says: str) -> None:
    with pytest.raises(ValueError, match=says):
        parse_bulk(params)


def test_empty_fields_are_no_filter_and_no_action_takes_it() -> None:
    bulk = parse_bulk({"status": "", "kind": "", "queue": "", "from": " ", "until": "", "error": ""})
    assert bulk.is_empty() and not bulk.takes("retry") and not bulk.takes("cancel")
    assert bulk_query(bulk) == dict.fromkeys(("status", "kind", "queue", "time_of", "from", "until", "error"))


def test_each_action_takes_only_its_statuses() -> None:
    assert parse_bulk({"status": "failed"}).takes("retry") and not parse_bulk({"status": "failed"}).takes("cancel")
    assert parse_bulk({"status": "queued"}).takes("cancel") and not parse_bulk({"status": "queued"}).takes("retry")
    assert not any(parse_bulk({"status": "succeeded"}).takes(a) for a in ("retry", "cancel"))
    assert parse_bulk({"kind": "x"}).takes("retry") and parse_bulk({"kind": "x"}).takes("cancel")


def test_the_filter_in_words_escapes_every_value() -> None:
    words = bulk_words("retry", parse_bulk({"kind": "<b>k</b>", "queue": "q\u202e", "error": '"><script>x</script>'}))
    assert "<script>" not in words and "<b>k" not in words
    assert "&lt;b&gt;k&lt;/b&gt;" in words and "\\u202e" in words and "&quot;&gt;&lt;script&gt;" in words
    assert words.startswith("tasks of any status retry takes (failed, cancelled, timed_out, expired, dead)")
