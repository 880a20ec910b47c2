-- Deploy conductor:functions/run_state to pg
--
-- Queries (issue 31): a handler publishes a value at any point of its run, and a
-- client reads the latest one, while the run runs, while it waits (no worker holds
-- it then) and after it ended.
--
--   conductor.set_run_state(attempt_id, state) -> timestamptz   publish (worker)
--   conductor.run_state(task_id) -> (state, set_at)             read (client)
--
-- Tables: conductor.run_states (schema/run_states). set_run_state is fenced by the
-- attempt as save_step is: it locks the task row the attempt holds (_held_task),
-- then upserts the task's row. run_state reads only, so a client never holds a
-- lock a worker waits on.

begin;
set local role conductor_owner;

create or replace function conductor.set_run_state(attempt_id bigint, state jsonb) returns timestamptz
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_now timestamptz := conductor.now();
  v_task conductor.tasks;
  v_max integer;
begin
  select s.max_result_bytes into v_max from conductor.settings s where s.one;
  if pg_catalog.pg_column_size(set_run_state.state) > v_max then
    raise exception 'run state: value of % bytes of jsonb is over the limit of % bytes (conductor.settings.max_result_bytes)',
      pg_catalog.pg_column_size(set_run_state.state), v_max
      using errcode = 'QC107',
            detail = 'Nothing was stored; the task still runs.',
            hint = 'Publish a summary, or a reference to the data.';
  end if;
  v_task := conductor._held_task(set_run_state.attempt_id);
  insert into conductor.run_states as r (task_id, state, set_at, attempt_id)
  values (v_task.id, set_run_state.state, v_now, set_run_state.attempt_id)
  on conflict on constraint run_states_pkey do update
    set state = excluded.state, set_at = excluded.set_at, attempt_id = excluded.attempt_id;
  return v_now;
end
$$;

comment on function conductor.set_run_state(bigint, jsonb) is
$$Publishes state (any JSON; NULL too) as the current state of the task held by attempt_id,
replacing what it published before; returns the time recorded. conductor.run_state() reads
it. Fenced like save_step: raises QC201 lease lost, QC202 cancelled, QC203 no such attempt,
QC208 an attempt of another login's worker, QC107 for a value larger than
conductor.settings.max_result_bytes; then nothing is stored. Locks the task's row (for no
key update) and its run_states row.$$;

create or replace function conductor.run_state(task_id bigint)
  returns table (state jsonb, set_at timestamptz)
  language plpgsql stable
  security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  if not exists (select from conductor.tasks t where t.id = run_state.task_id) then
    raise exception 'task % does not exist', run_state.task_id using errcode = 'QC203';
  end if;
  return query
  select r.state, r.set_at from (select) one
    left join conductor.run_states r on r.task_id = run_state.task_id;
end
$$;

comment on function conductor.run_state(bigint) is
$$The state the task's handler last published (conductor.set_run_state) and when: one row,
both NULL when it published none. Answers whatever the task's status: running, waiting (no
worker holds it), finished. Raises QC203 when the task does not exist. Reads only; takes no
locks.$$;

revoke execute on function conductor.set_run_state(bigint, jsonb) from public;
revoke execute on function conductor.run_state(bigint) from public;
grant execute on function conductor.set_run_state(bigint, jsonb) to conductor_worker, conductor_admin;
grant execute on function conductor.run_state(bigint) to conductor_client, conductor_worker, conductor_admin;

commit;
