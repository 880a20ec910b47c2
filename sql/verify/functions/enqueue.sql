-- Verify conductor:functions/enqueue on pg

begin;

select 1 / (conductor.enqueue('verify', '{"n": 1}') > 0)::int;
select 1 / (count(*) = 2)::int
  from conductor.enqueue_many('[{"kind": "verify"}, {"kind": "verify", "queue": "other"}]');
select 1 / pg_catalog.has_function_privilege('conductor_client',
  'conductor.enqueue(text, jsonb, text, integer, timestamptz, integer, text, text, bigint, integer, interval, double precision, interval, interval, text, integer, interval, text[], text, interval, interval, interval, text)',
  'execute')::int;
select 1 / (conductor._spec_problem(row('k', '{}', 'default', null, 'infinity', null, null, null, null, null, null,
                                        'NaN', null, null, null, null, null, null, null)::conductor._task_spec) = 'run_at')::int;
select 1 / (conductor._spec_problem(row('k', '{}', 'default', null, null, null, null, null, null, null, null,
                                        'NaN', null, null, null, null, null, null, null)::conductor._task_spec) = 'backoff_factor')::int;
select 1 / (conductor._spec_problem(row('k', '{}', 'default', null, null, null, null, null, null, null, null,
                                        null, null, '0 s', null, null, null, null, null)::conductor._task_spec) = 'timeout')::int;
select 1 / (conductor._spec_problem(row('k', '{}', 'default', null, null, null, null, null, null, null, null,
                                        null, null, null, '00-0af7651916cd43dd8448eb211c80319c-00000000000000', null, null, null, null)::conductor._task_spec)
            = 'traceparent')::int;
select 1 / (conductor._spec_problem(row('k', '{}', 'default', null, null, null, null, null, null, null, null,
                                        null, null, null, null, null, null, '0 s', null)::conductor._task_spec) = 'expires_in')::int;
-- the kind rule refuses control, format and markup characters; real kinds stay valid
select 1 / (conductor._spec_problem(row('a' || pg_catalog.chr(8238) || 'b', '{}', 'default', null, null, null, null, null,
                                        null, null, null, null, null, null, null, null, null, null, null)::conductor._task_spec) = 'kind')::int;
select 1 / (conductor._spec_problem(row('a' || pg_catalog.chr(10) || 'b', '{}', 'default', null, null, null, null, null,
                                        null, null, null, null, null, null, null, null, null, null, null)::conductor._task_spec) = 'kind')::int;
select 1 / (conductor._spec_problem(row('<b>', '{}', 'default', null, null, null, null, null,
                                        null, null, null, null, null, null, null, null, null, null, null)::conductor._task_spec) = 'kind')::int;
select 1 / (conductor._spec_problem(row('shop.tasks.send_receipt', '{}', 'default', null, null, null, null, null,
                                        null, null, null, null, null, null, null, null, null, null, null)::conductor._task_spec) is null)::int;
-- a worker's queues list takes the queue rule
do $$
begin
  perform conductor._check_queue_names(array['default', 'a.b:c/d-e_9']);
  begin
    perform conductor._check_queue_names(array['default', 'a b']);
    raise exception '_check_queue_names took an invalid queue name';
  exception when sqlstate 'QC104' then
    null;
  end;
end
$$;
select 1 / (not pg_catalog.has_function_privilege('conductor_worker', 'conductor._check_queue_names(text[])', 'execute'))::int;
-- a kind's defaults apply to a task that does not say
insert into conductor.kinds (kind, queue, priority, timeout, updated_at)
values ('verify-kind-defaults', 'verify-q', 5, '1 minute', now());
do $$
declare
  v_id bigint := conductor.enqueue('verify-kind-defaults');
begin
  if not exists (select from conductor.tasks t
                  where t.id = v_id and (t.queue, t.priority, t.timeout) = ('verify-q', 5, interval '1 minute')) then
    raise exception 'enqueue did not take the kind''s queue, priority and timeout';
  end if;
end
$$;

rollback;
