"""The statements this package sends that :mod:`pyconductor.queries` does not
have, one line each, in the same style (a call of one ``conductor`` function in
named notation). Enqueue, live workers and prune are pyconductor's own.
"""

from __future__ import annotations

__all__ = ["GET_TASK_TEXT", "OVERDUE_SCHEDULES", "with_enqueued_at"]

# conductor.get_task with its json columns as text: Django's cursor decodes json
# differently per driver and per settings, text decodes one way everywhere
GET_TASK_TEXT = (
    "select id, queue, kind, status::text as status, payload::text as payload, result::text as result, error, "
    "priority, run_at, attempt, max_attempts, recoveries, max_recoveries, parent_id, root_id, dedupe_key, "
    "concurrency_key, enqueued_at, started_at, finished_at, attempts::text as attempts, timeout "
    "from conductor.get_task(task_id => %(task_id)s)"
)


def with_enqueued_at(enqueue: str) -> str:
    """pyconductor's enqueue statement, answering the time the row stores as well:
    enqueue writes its transaction's conductor.now(), the same in this statement."""
    return f"select e.id, conductor.now() as enqueued_at from ({enqueue}) e"


# the enabled schedules no tick fired within grace of their due time (conductor_health)
OVERDUE_SCHEDULES = "select name, next_due_at, overdue from conductor.overdue_schedules(grace => %(grace)s::interval)"
