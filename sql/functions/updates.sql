-- Deploy conductor:functions/updates to pg
--
-- Updates with a reply (issue 31): ask a running workflow something and get its
-- answer back.
--
--   conductor.send_update(task_id, name, payload) -> bigint   a client sends (the update's id)
--   conductor.wait_update(attempt_id, step, name, timeout)    the run waits for the next
--                                     -> (state, result)       update of that name, or takes it
--   conductor.reply_update(attempt_id, update_id, reply) -> jsonb   the run answers, once
--   conductor.update_reply(update_id) -> (task_id, name, reply, replied_at)   the sender reads it
--   conductor._update_event(task_id, name, ordinal) -> text   the event that delivers an update
--
-- Delivery is an event, so an update inherits the events' guarantee against lost
-- wake-ups without a lock anyone can hold (functions/runs, the map): the n-th update
-- of a name sent to a task (updates.ordinal, numbered by send_update) is emitted as
-- the event _update_event(task, name, n), payload {"update_id", "name", "payload"};
-- the run's n-th wait for that name (n: 1 + the updates of that name its checkpoints
-- already hold) is a suspend on that event. A wait and a send that overlap and miss
-- each other are woken by the reaper's pass over pending events. A replay of the
-- handler finds the wait's checkpoint and gets the same update; reply_update keeps
-- the first reply, so a replay does not answer twice. A rewind that deletes the
-- wait's step makes the replay wait for the same n-th update, which is there.
--
-- Tables: conductor.updates (schema/updates), conductor.events, conductor.steps.
-- Lock order: send_update locks no task row (emit_event skips a held waiter, and the
-- reaper takes it); its insert of the n-th update waits at most 100 ms for another
-- sender of the same name to the same task (then 40001). wait_update locks its task
-- row (as suspend). reply_update locks its task row, then the update's row.

begin;
set local role conductor_owner;

create or replace function conductor._update_event(task_id bigint, name text, ordinal integer) returns text
  language sql immutable
  set search_path = pg_catalog, pg_temp
as $$
  select 'conductor.update:' || _update_event.task_id || ':' || _update_event.ordinal || ':' || _update_event.name
$$;

comment on function conductor._update_event(bigint, text, integer) is
$$The name of the event that delivers the ordinal-th update named name to task_id:
'conductor.update:<task_id>:<ordinal>:<name>'. Never raises.$$;

create or replace function conductor._check_update_name(name text) returns void
  language plpgsql immutable
  set search_path = pg_catalog, pg_temp
as $$
begin
  if _check_update_name.name is null or _check_update_name.name = ''
     or pg_catalog.octet_length(_check_update_name.name) > 200 then
    raise exception 'invalid update name %: a non-empty name of at most 200 bytes', conductor._echo(_check_update_name.name)
      using errcode = 'QC131';
  end if;
end
$$;

comment on function conductor._check_update_name(text) is
$$Raises QC131 naming the value (conductor._echo) unless name is an update name: non-empty, at
most 200 bytes. Called by send_update and wait_update before they read anything.$$;

revoke execute on function conductor._update_event(bigint, text, integer) from public;
revoke execute on function conductor._check_update_name(text) from public;

create or replace function conductor.send_update(task_id bigint, name text, payload jsonb default null)
  returns bigint
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
  set lock_timeout = '100ms'
as $$
declare
  v_now timestamptz := conductor.now();
  v_status conductor.task_status;
  v_ordinal integer;
  v_id bigint;
begin
  perform conductor._check_update_name(send_update.name);
  if pg_catalog.pg_column_size(send_update.payload) > conductor._max_payload_bytes() then
    raise exception 'payload too large for update %: % bytes, the limit is % bytes',
      conductor._echo(send_update.name), pg_catalog.pg_column_size(send_update.payload), conductor._max_payload_bytes()
      using errcode = 'QC103',
            hint = 'Send a reference to the data instead.';
  end if;
  select t.status into v_status from conductor.tasks t where t.id = send_update.task_id;
  if not found then
    raise exception 'task % does not exist', send_update.task_id using errcode = 'QC203';
  end if;
  if v_status <> all (conductor.unfinished_statuses()) then
    raise exception 'task % is %: a finished run takes no updates', send_update.task_id, v_status
      using errcode = 'QC217',
            hint = 'Rewind it first (conductor.rewind) to run it again.';
  end if;

  select coalesce(pg_catalog.max(u.ordinal), 0) + 1 into v_ordinal
    from conductor.updates u where u.task_id = send_update.task_id and u.name = send_update.name;
  begin
    insert into conductor.updates (task_id, name, ordinal, payload, sent_at)
    values (send_update.task_id, send_update.name, v_ordinal, send_update.payload, v_now)
    returning id into v_id;
  exception when unique_violation or lock_not_available then
    raise exception 'another update % to task % is being sent at the same time', conductor._echo(send_update.name),
      send_update.task_id
      using errcode = '40001',
            detail = 'Nothing was sent.',
            hint = 'Retry the call.';
  end;
  perform conductor.emit_event(conductor._update_event(send_update.task_id, send_update.name, v_ordinal),
                               pg_catalog.jsonb_build_object('update_id', v_id, 'name', send_update.name,
                                                             'payload', send_update.payload));
  return v_id;
end
$$;

comment on function conductor.send_update(bigint, text, jsonb) is
$$Sends update name with payload (any JSON; NULL too) to the unfinished task task_id and
returns the update's id; conductor.update_reply(id) reads the answer. Updates of one name are
delivered in the order sent, each to one wait (wait_update) of the run: a run waiting for
name is woken with it now (or by reap() when the two overlapped), a later wait takes it at
once. Locks no task row; waits at most 100 ms for another sender of the same name to the same
task, then raises 40001 (retry; nothing was sent). Raises QC131 for a name empty or over 200
bytes, QC103 for a payload over conductor.settings.max_payload_bytes, QC203 when the task does
not exist, QC217 when it is finished; then nothing is sent.$$;

create or replace function conductor.wait_update(
  attempt_id bigint,
  step       text,
  name       text,
  timeout    interval default null
) returns table (state text, result jsonb)
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_task conductor.tasks;
  v_taken integer;
  v_event text;
  v_update_id bigint;
  v_payload jsonb;
begin
  perform conductor._check_update_name(wait_update.name);
  perform conductor._check_step_name(wait_update.step);
  v_task := conductor._held_task(wait_update.attempt_id);
  -- this is the run's n-th wait for name: the updates its checkpoints hold so far, + 1
  select pg_catalog.count(*)::integer into v_taken
    from conductor.steps s
   where s.task_id = v_task.id and s.name <> wait_update.step
     and (s.result->'payload') is not null  -- delivered; a timed-out wait took none
     and s.result->>'event' in (select conductor._update_event(v_task.id, u.name, u.ordinal)
                                  from conductor.updates u
                                 where u.task_id = v_task.id and u.name = wait_update.name);
  v_event := conductor._update_event(v_task.id, wait_update.name, v_taken + 1);
  -- an update sent long before the run waits for it outlives its event, which prune()
  -- deletes once old and waited for by no one: the update's row emits it again
  select u.id, u.payload into v_update_id, v_payload
    from conductor.updates u
   where u.task_id = v_task.id and u.name = wait_update.name and u.ordinal = v_taken + 1;
  if found and not exists (select from conductor.events e where e.name = v_event) then
    perform conductor._insert_event(v_event, pg_catalog.jsonb_build_object('update_id', v_update_id,
                                      'name', wait_update.name, 'payload', v_payload), conductor.now());
  end if;
  return query
  select s.state, s.result
    from conductor.suspend(wait_update.attempt_id, wait_update.step, 'event', v_event, null, wait_update.timeout) s;
end
$$;

comment on function conductor.wait_update(bigint, text, text, interval) is
$$The run held by attempt_id waits for its next update named name; step names the wait's
checkpoint. Returns state 'ready' with {"event", "payload": {"update_id", "name", "payload"}}
when that update was sent already (or the step is checkpointed: a replay gets the same
update); otherwise parks the task as suspend does ('waiting': the handler stops and runs
again when the update comes). timeout (default none): then the checkpoint is
{"event", "timed_out": true} and the update, when it comes, waits for the next wait. An
update whose event prune() deleted (old, and no one waited for it) is emitted again from its
row. Locks the task's row (as suspend). Raises as suspend (QC201/QC202/QC203, QC106 for a bad step or
timeout), and QC131 for an update name empty or over 200 bytes.$$;

create or replace function conductor.reply_update(attempt_id bigint, update_id bigint, reply jsonb)
  returns jsonb
  language plpgsql volatile
  security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_task conductor.tasks;
  v_update conductor.updates;
  v_max integer;
begin
  v_task := conductor._held_task(reply_update.attempt_id);
  select u.* into v_update from conductor.updates u where u.id = reply_update.update_id for update;
  if not found then
    raise exception 'update % does not exist', reply_update.update_id using errcode = 'QC203';
  end if;
  if v_update.task_id <> v_task.id then
    raise exception 'update % was sent to task %, not to task % (attempt %)', v_update.id, v_update.task_id,
      v_task.id, reply_update.attempt_id
      using errcode = 'QC218',
            hint = 'A run replies only to its own updates.';
  end if;
  if v_update.replied_at is not null then
    return v_update.reply;  -- the first reply stays: a replay does not answer twice
  end if;
  select s.max_result_bytes into v_max from conductor.settings s where s.one;
  if pg_catalog.pg_column_size(reply_update.reply) > v_max then
    raise exception 'reply to update %: value of % bytes of jsonb is over the limit of % bytes (conductor.settings.max_result_bytes)',
      v_update.id, pg_catalog.pg_column_size(reply_update.reply), v_max
      using errcode = 'QC107',
            detail = 'Nothing was stored; the task still runs.';
  end if;
  update conductor.updates u set reply = reply_update.reply, replied_at = conductor.now()
   where u.id = v_update.id;
  return reply_update.reply;
end
$$;

comment on function conductor.reply_update(bigint, bigint, jsonb) is
$$The run held by attempt_id answers its update update_id with reply (any JSON); returns the
stored reply: this one, or the first one given (a replay does not answer twice).
conductor.update_reply() reads it. Locks the task's row, then the update's. Raises QC201 lease
lost, QC202 cancelled, QC203 no such attempt or update, QC208 an attempt of another login's
worker, QC218 when the update was sent to another task, QC107 for a reply over
conductor.settings.max_result_bytes; then nothing is stored.$$;

create or replace function conductor.update_reply(update_id bigint)
  returns table (task_id bigint, name text, reply jsonb, replied_at timestamptz)
  language plpgsql stable
  security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  return query
  select u.task_id, u.name, u.reply, u.replied_at from conductor.updates u where u.id = update_reply.update_id;
  if not found then
    raise exception 'update % does not exist', update_reply.update_id using errcode = 'QC203';
  end if;
end
$$;

comment on function conductor.update_reply(bigint) is
$$The update update_id: its task, its name, and the run's reply with the time it was given
(both NULL until the run replied). Reads only. Raises QC203 when the update does not exist.$$;

revoke execute on function conductor.send_update(bigint, text, jsonb) from public;
revoke execute on function conductor.wait_update(bigint, text, text, interval) from public;
revoke execute on function conductor.reply_update(bigint, bigint, jsonb) from public;
revoke execute on function conductor.update_reply(bigint) from public;
grant execute on function conductor.send_update(bigint, text, jsonb) to conductor_client, conductor_worker, conductor_admin;
grant execute on function conductor.update_reply(bigint) to conductor_client, conductor_worker, conductor_admin;
grant execute on function conductor.wait_update(bigint, text, text, interval) to conductor_worker, conductor_admin;
grant execute on function conductor.reply_update(bigint, bigint, jsonb) to conductor_worker, conductor_admin;

commit;
