"""Stale plans: does a connection that first ran conductor.enqueue_many while
conductor.tasks was empty (and freshly analysed) pay for that plan once the
table has grown? It keeps its plans (conductor._enqueue plans once per
connection) until ANALYZE (or autoanalyze) invalidates them. When this was
written, that plan joined conductor.tasks by a scan and ran 150-200x slower
(bench/HISTORY.md, issue 5's "Section 2 again"); now its lookups are index probes whatever the statistics,
and (A) after the growth should be no slower than (B).

    .venv/bin/python bench/stale_plans.py --dsn URL [--rows 50000]

Destroys every task in the database. Prints milliseconds per enqueue_many of
500 tasks: (A) on the empty table, (A) after --rows tasks were inserted in
another queue, (B) a new connection, (A) after ANALYZE.
"""

from __future__ import annotations

import argparse
import time

import psycopg

BATCH = ("select count(*) from conductor.enqueue_many((select jsonb_agg(jsonb_build_object("
         "'kind', 'k', 'queue', 'stale', 'payload', jsonb_build_object('n', i))) from generate_series(1, 500) i))")


def timed(conn: psycopg.Connection, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        conn.execute(BATCH)
        out.append(round((time.perf_counter() - t0) * 1000, 1))
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dsn", required=True)
    p.add_argument("--rows", type=int, default=50_000)
    args = p.parse_args()
    adm = psycopg.connect(args.dsn, autocommit=True)
    adm.execute("delete from conductor.attempts")
    adm.execute("delete from conductor.tasks")
    adm.execute("vacuum analyze conductor.tasks")
    a = psycopg.connect(args.dsn, autocommit=True)
    print("A, empty table, 8 calls (ms):", timed(a, 8))
    adm.execute(f"""insert into conductor.tasks (id, queue, kind, payload, run_at, enqueued_at, root_id)
        select id, 'other', 'noop', jsonb_build_object('n', id), now(), now(), id
          from (select nextval('conductor.tasks_id_seq') as id from generate_series(1, {args.rows})) s""")
    print(f"A, after {args.rows} rows inserted elsewhere:", timed(a, 3))
    b = psycopg.connect(args.dsn, autocommit=True)
    print("B, a new connection:", timed(b, 3))
    adm.execute("analyze conductor.tasks")
    print("A, after ANALYZE conductor.tasks:", timed(a, 3))


if __name__ == "__main__":
    main()
