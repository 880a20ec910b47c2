"""pyconductor.wire: the strict encoder, and the decoder a worker's
connections use, against what PostgreSQL really sends."""

from __future__ import annotations

import json
import math
from typing import Any

import psycopg
import pytest

from pyconductor.wire import bigint_array, dumps_json, loads_json, text_array, use_fast_loads

VALUES: list[Any] = [
    None, True, 0, -7, 2.5, 1e-7, "", "é ✓ \u2028 \"quoted\" \\", [], [1, [2, {"a": None}]],
    {}, {"n": 1}, {"nested": {"list": [1, 2.5, "x", None, False]}, "ünïcode": "日本"},
]  # fmt: skip


@pytest.mark.parametrize("value", VALUES)
def test_dumps_is_compact_json_that_reads_back(value: Any) -> None:
    text = dumps_json(value)
    assert json.loads(text) == value
    assert text == json.dumps(value, separators=(",", ":"))


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, {"x": [math.nan]}])
def test_dumps_refuses_what_postgresql_refuses(value: Any) -> None:
    with pytest.raises(ValueError):
        dumps_json(value)


@pytest.mark.parametrize("value", [{1, 2}, object(), {"x": b"bytes"}])
def test_dumps_refuses_what_is_not_json(value: Any) -> None:
    with pytest.raises(TypeError):
        dumps_json(value)


def test_an_empty_object_is_a_new_dict_each_time() -> None:
    first = loads_json(b"{}")
    first["mutated"] = True
    assert loads_json(b"{}") == {}


@pytest.mark.parametrize("binary", [False, True])
def test_a_connection_with_fast_loads_reads_json_and_jsonb_like_the_default(dsn: str, binary: bool) -> None:
    query = "select %(v)s::jsonb, %(v)s::json, '{}'::jsonb, ' { } '::json"
    with psycopg.connect(dsn, autocommit=True) as plain, psycopg.connect(dsn, autocommit=True) as fast:
        use_fast_loads(fast)
        for value in VALUES:
            params = {"v": dumps_json(value)}
            expected = plain.cursor(binary=binary).execute(query, params).fetchone()
            got = fast.cursor(binary=binary).execute(query, params).fetchone()
            assert got == expected
            assert got is not None and got[0] == value and got[3] == {}


def test_array_literals_reach_postgresql_element_for_element(dsn: str) -> None:
    texts = [dumps_json(v) for v in VALUES] + ['"NULL"', '"{\\"x\\": [\\"\\\\\\\\\\"]}"']
    ids = [1, -2, 2**62, 0]
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute("select %s::jsonb[], %s::bigint[], %s::bigint[]",
                           [text_array(texts), bigint_array(ids), bigint_array([])]).fetchone()  # fmt: skip
    assert row is not None
    assert row[0] == [json.loads(t) for t in texts]
    assert row[1] == ids and row[2] == []
