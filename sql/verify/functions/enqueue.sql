-- Verify conductor:functions/enqueue on pg

begin;

select 1 / (conductor.enqueue('verify', '{"n": 1}') > 0)::int;
select 1 / (count(*) = 2)::int
  from conductor.enqueue_many('[{"kind": "verify"}, {"kind": "verify", "queue": "other"}]');
select 1 / pg_catalog.has_function_privilege('conductor_client',
  'conductor.enqueue(text, jsonb, text, integer, timestamptz, integer, text, text, bigint, integer, interval, double precision, interval)',
  'execute')::int;
select 1 / (conductor._spec_problem(row('k', '{}', 'default', null, 'infinity', null, null, null, null, null, null,
                                        'NaN', null, null)::conductor._task_spec) = 'run_at')::int;
select 1 / (conductor._spec_problem(row('k', '{}', 'default', null, null, null, null, null, null, null, null,
                                        'NaN', null, null)::conductor._task_spec) = 'backoff_factor')::int;

rollback;
