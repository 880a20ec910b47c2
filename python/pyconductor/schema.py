"""Which release of the conductor schema this driver works with.

The schema reports its release through ``conductor.version()`` (added in
0.2.0; a v0.1.0 database has no such function). A worker or client checks it
once per connection it opens for work and refuses a schema it was not built
for, naming the command that fixes it, instead of failing later on a missing
function or, worse, running against functions whose contract changed.

The rule is exact equality of the schema release: the plan shipped inside
this package is the one ``pyconductor migrate`` deploys, so a database
migrated with this package always matches it.
"""

from __future__ import annotations

from typing import Any

import psycopg

from pyconductor import queries
from pyconductor.errors import SchemaMismatch

__all__ = ["SCHEMA_VERSION", "check_schema", "schema_version"]

SCHEMA_VERSION = "0.3.0"

_FIX = "run `pyconductor migrate --dsn ...` (or `sqitch deploy`) with this release of pyconductor"


def schema_version(conn: psycopg.Connection[Any]) -> str | None:
    """The release ``conductor.version()`` reports; ``"0.1.0"`` for a schema
    from before the function existed; None when no conductor schema is deployed."""
    row = conn.execute(queries.SCHEMA_PRESENT).fetchone()
    assert row is not None
    has_schema, has_version = row
    if not has_schema:
        return None
    if not has_version:
        return "0.1.0"
    found = conn.execute(queries.DEPLOYED_VERSION).fetchone()
    assert found is not None
    return str(found[0])


def check_schema(conn: psycopg.Connection[Any]) -> str:
    """Raise SchemaMismatch unless the database holds schema release SCHEMA_VERSION.

    Call it right after connecting: on a connection that is not in autocommit
    mode it ends the transaction its query opened."""
    found = schema_version(conn)
    if not conn.autocommit:
        conn.rollback()
    if found is None:
        raise SchemaMismatch(f"no conductor schema in database {conn.info.dbname!r}: {_FIX}")
    if found != SCHEMA_VERSION:
        raise SchemaMismatch(
            f"database {conn.info.dbname!r} holds conductor schema {found}, "
            f"this pyconductor needs {SCHEMA_VERSION}: {_FIX}"
            + (
                ""
                if _older(found)
                else f"; or install the driver of the schema's release: pip install 'conductor-pg=={found}'"
            )
        )
    return found


def _older(found: str) -> bool:
    def key(v: str) -> tuple[int, ...]:
        return tuple(int(p) for p in v.split(".") if p.isdigit())

    return key(found) < key(SCHEMA_VERSION)
