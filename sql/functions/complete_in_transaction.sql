-- Deploy conductor:functions/complete_in_transaction to pg
--
-- Completing inside the handler's own transaction (issue 31).
--
--   conductor.complete_in_transaction(attempt_id, result)   -> void, raises when not held
--
-- A handler that writes to the application's tables and then reports through
-- complete() commits twice: a crash between the two runs the handler again on
-- effects already committed. Called on the connection of the handler's writes,
-- in the same transaction, this finishes the task when, and only when, those
-- writes commit: a crash or a rollback before the commit leaves neither.
--
-- Why not complete() itself. complete() serves a worker's reporter, which sends
-- the results of many handlers on one connection, and so gives up on a task row
-- another transaction holds after 200 ms (55P03: "send it again later"). In the
-- handler's transaction there is no "later": a 55P03 aborts the transaction,
-- and with it the handler's writes, although the attempt still holds its task.
-- Here the task row, then its parent's (a child's end locks its parent: the
-- trigger tasks_child_finished), are locked first and waited for as long as
-- the holder keeps them (a client's cancel() left open: once it commits, the
-- call raises QC202 and the transaction rolls back; once it rolls back, the task
-- completes). Waiting blocks only this handler's transaction; heartbeat and
-- reap skip a task row another transaction holds, so they never wait for it.
--
-- Fencing. The fence is the one of every call about a claim (_held_task): the
-- attempt must still hold its task (running, tasks.attempt_id = the attempt)
-- when its row is locked. A reap that took the task back, a cancel, or another
-- attempt that completed it, committed before that: QC201 / QC202 and nothing
-- changes; the caller's transaction is aborted, its writes roll back with it.
-- After the row is locked nobody can take the task back before this transaction
-- ends: reap, cancel and heartbeat skip or wait for the row.
--
-- READ COMMITTED only. Under REPEATABLE READ or SERIALIZABLE a row changed after
-- the transaction's snapshot cannot be locked (40001), and the worker's own
-- heartbeat changes the task row (the lease) every few seconds: the call would
-- fail at random although the attempt holds its task. It is refused up front,
-- QC213, before anything is locked.
--
-- A result over conductor.settings.max_result_bytes raises QC107 (complete()
-- fails the task instead, since the handler's effects are already done; here
-- they roll back with the transaction, and the worker reports the failure).
--
-- Lock order: the task row, then its parent's, then (in _complete) the attempt
-- row, as complete, cancel and the trigger; each waited for without a limit of
-- its own (the caller's lock_timeout, if any, applies).

begin;
set local role conductor_owner;

create or replace function conductor.complete_in_transaction(attempt_id bigint, result jsonb default null)
  returns void
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_isolation text := pg_catalog.current_setting('transaction_isolation');
  v_max integer;
  v_task conductor.tasks;
  v_done record;
begin
  if v_isolation <> 'read committed' then
    raise exception 'complete_in_transaction needs a READ COMMITTED transaction, not %', conductor._echo(v_isolation)
      using errcode = 'QC213',
            detail = pg_catalog.format('Attempt %s: nothing changed. Under a snapshot kept for the whole transaction, '
                                       'a heartbeat that extends the lease makes the task row unlockable (40001).',
                                       complete_in_transaction.attempt_id),
            hint = 'Begin the transaction with ISOLATION LEVEL READ COMMITTED.';
  end if;
  select s.max_result_bytes into v_max from conductor.settings s where s.one;
  if pg_catalog.pg_column_size(complete_in_transaction.result) > v_max then
    raise exception 'result of attempt % is % bytes of jsonb, over the limit of % bytes (conductor.settings.max_result_bytes)',
      complete_in_transaction.attempt_id, pg_catalog.pg_column_size(complete_in_transaction.result), v_max
      using errcode = 'QC107',
            detail = 'Nothing was stored; the transaction is aborted, with the handler''s writes.',
            hint = 'Store large data elsewhere and return a reference to it.';
  end if;
  -- the fence; waits for the task row, raises QC201, QC202, QC203 or QC208
  v_task := conductor._held_task(complete_in_transaction.attempt_id);
  if v_task.parent_id is not null then
    -- locked now, waited for: _complete would give up on it after 200 ms
    perform from conductor.tasks p where p.id = v_task.parent_id for no key update;
  end if;
  v_done := conductor._complete(array[complete_in_transaction.attempt_id], array[complete_in_transaction.result]);
  if pg_catalog.cardinality(v_done.stored) = 0 then
    perform conductor._refuse(complete_in_transaction.attempt_id);  -- not reached: the rows are this transaction's
  end if;
end
$$;

comment on function conductor.complete_in_transaction(bigint, jsonb) is
$$Finishes the task held by attempt_id as succeeded with result (any JSON, or NULL), in the
caller's transaction: call it on the connection of the handler's own writes, before their
COMMIT, and the task succeeds exactly when they commit (a rollback or a crash leaves
neither). Locks the task row, then its parent's, waiting for another transaction that holds
them (as long as it does: no 200 ms limit, unlike complete), so the task stays held until
the caller's transaction ends. Raises, changing nothing (the caller's transaction is then
aborted, its writes with it): QC201 when the attempt no longer holds its task (lease lost
and taken back, or already completed), QC202 when the task was cancelled, QC203 when the
attempt does not exist, QC208 when another login registered the attempt's worker (an admin
may complete any), QC107 when the result is larger than conductor.settings.max_result_bytes,
QC213 when the transaction is not READ COMMITTED (a heartbeat would make the lock fail with
40001). Announces the task on conductor_done at commit. Any number of callers at once.$$;

revoke execute on function conductor.complete_in_transaction(bigint, jsonb) from public;
grant execute on function conductor.complete_in_transaction(bigint, jsonb) to conductor_worker, conductor_admin;

commit;
