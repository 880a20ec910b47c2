"""The tier of every test module: the one table (issue 27). conftest.py marks each
collected test with its module's tier (``-m unit``, ``-m "not topology"``), fails the
collection of a module the table does not name, and marks ``quick`` what
``make test-quick`` runs; test_tiers.py checks that the table names each module
once and nothing else.

- unit: no database, no server, no network (python/tests/unit/, and the lint).
- integration: one PostgreSQL server (the session's throwaway cluster, or a
  private one the test starts), with workers in the test process or as real
  processes, signals, kill -9, restarts of that server.
- topology: servers and networks of the test's own making: a standby and a
  failover, network namespaces, a pooler in front, a cluster crashed on purpose,
  another OS user's checkout.
- browser: the dashboard in a real Chromium.

QUICK: the integration modules ``make test-quick`` runs besides the whole unit
tier: the client, the embedded worker and the docs, what a change to the
package needs first. ``make test`` runs every tier.
"""

from __future__ import annotations

from pathlib import PurePosixPath

__all__ = ["QUICK", "TIERS", "tier_of"]

TIERS: dict[str, tuple[str, ...]] = {
    "unit": ("unit/", "test_lint.py", "test_tiers.py"),
    "integration": (
        "test_aio.py", "test_async_handlers.py", "test_buffer.py", "test_bus.py", "test_client.py",
        "test_concurrency_limits.py",
        "test_cron_oracle.py", "test_dashboard.py", "test_debounce_processes.py", "test_demo.py", "test_devdb.py", "test_django_backend.py",
        "test_django_commands.py", "test_django_docs.py", "test_django_worker.py", "test_docs.py", "test_endpoints.py",
        "test_enqueue_in_transaction.py", "test_exclusive.py", "test_expiry.py", "test_graphs.py", "test_graphs_processes.py", "test_dashboard_graph.py", "test_fleet.py", "test_foreign_locks.py",
        "test_handler_logs.py", "test_handler_transactions.py", "test_transaction_chaos.py", "test_infinite_times.py", "test_lifecycle_scenario.py", "test_logging.py",
        "test_migrate.py", "test_migrate_lock.py", "test_ops_cli.py", "test_ops_controls_cli.py", "test_queue_limit.py",
        "test_rate_limit.py", "test_rate_limit_per_key.py",
        "test_readme.py", "test_reaper_schedule.py", "test_recovery.py", "test_runs.py", "test_runs_processes.py", "test_versioning_processes.py",
        "test_scheduler.py", "test_schema_dump.py", "test_statuses.py", "test_serve.py", "test_singleton.py", "test_supervisor.py",
        "test_timeouts.py", "test_tracing.py", "test_tracing_optional.py", "test_uniqueness.py", "test_upgrade.py", "test_wakeups.py",
        "test_watch_isolation.py", "test_wheel.py", "test_wire.py", "test_worker.py", "test_worker_database_errors.py",
        "test_worker_declarations.py", "test_worker_processes.py", "test_worker_reports.py", "test_workflows_processes.py",
    ),
    "topology": (
        "test_claim_durability.py", "test_failover.py", "test_partition.py", "test_pgbouncer.py",
        "test_private_checkout.py",
    ),
    "browser": ("test_browser.py", "test_browser_bulk.py", "test_browser_charts.py", "test_browser_search.py",
                "test_browser_waiting.py", "test_browser_graph.py"),
}  # fmt: skip

QUICK: tuple[str, ...] = ("test_client.py", "test_worker.py", "test_docs.py")


def tier_of(module: str) -> str | None:
    """The tier of ``module``, a path relative to python/tests (``unit/test_dsn.py``), or
    None when the table does not name it. A name ending in / is a folder."""
    path = PurePosixPath(module)
    for tier, names in TIERS.items():
        for name in names:
            if (name.endswith("/") and path.parts[:1] == (name.rstrip("/"),)) or module == name:
                return tier
    return None
