-- conductor._spec_problem, the one validation of a task (enqueue, enqueue_many, configure_kind,
-- the schedules): the first field that breaks a rule, NULL for a valid spec;
-- _raise_spec_problem raises it with its SQLSTATE, a message naming the value, and the detail
-- it is given.
begin;
select plan(24);
\ir ../helpers.psql

select is(conductor._spec_problem(conductor_tests.spec()), null, 'A valid spec has no problem.');
select is(conductor._spec_problem(conductor_tests.spec(kind => ' k')), 'kind', 'A padded kind.');
select is(conductor._spec_problem(conductor_tests.spec(payload => '[1]')), 'payload', 'An array payload.');
update conductor.settings set max_payload_bytes = 64;
select is(conductor._spec_problem(conductor_tests.spec(payload => jsonb_build_object('s', repeat('x', 100)))), 'payload_size',
  'A payload over conductor.settings.max_payload_bytes.');
update conductor.settings set max_payload_bytes = default;
select is(conductor._spec_problem(conductor_tests.spec(queue => '')), 'queue', 'An empty queue.');
select is(conductor._spec_problem(conductor_tests.spec(run_at => 'infinity')), 'run_at', 'An infinite run_at.');
select is(conductor._spec_problem(conductor_tests.spec(max_attempts => 0)), 'max_attempts', 'max_attempts 0.');
select is(conductor._spec_problem(conductor_tests.spec(max_recoveries => -1)), 'max_recoveries', 'A negative max_recoveries.');
select is(conductor._spec_problem(conductor_tests.spec(backoff_base => '31 days')), 'backoff_base', 'A base over 30 days.');
select is(conductor._spec_problem(conductor_tests.spec(backoff_max => '-1 second')), 'backoff_max', 'A negative max.');
select is(conductor._spec_problem(conductor_tests.spec(backoff_factor => 0.5)), 'backoff_factor', 'A factor below 1.');
select is(conductor._spec_problem(conductor_tests.spec(backoff_factor => 'NaN')), 'backoff_factor', 'A factor NaN.');
select is(conductor._spec_problem(conductor_tests.spec(backoff_base => '1 minute', backoff_max => '1 second')), 'backoff_order',
  'A base over the max.');
select is(conductor._spec_problem(conductor_tests.spec(timeout => '0 seconds')), 'timeout', 'A timeout of 0.');
select is(conductor._spec_problem(conductor_tests.spec(timeout => '30 days 1 second')), 'timeout', 'A timeout over 30 days.');
select is(conductor._spec_problem(conductor_tests.spec(dedupe_key => repeat('d', 1001))), 'dedupe_key', 'A long dedupe key.');
select is(conductor._spec_problem(conductor_tests.spec(concurrency_key => repeat('c', 1001))), 'concurrency_key',
  'A long concurrency key.');
select is(conductor._spec_problem(conductor_tests.spec(traceparent => 'ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01')),
  'traceparent', 'A traceparent of version ff.');
select is(conductor._spec_problem(conductor_tests.spec(kind => '', payload => '[]')), 'kind',
  'With several problems, the first in the order kind, payload, size, queue, run_at, policy, keys is named.');

select throws_ok($$select conductor._raise_spec_problem('payload', conductor_tests.spec(payload => '"x"'))$$, 'QC102',
  'invalid payload for kind ''k'': a payload is a JSON object, got string',
  '_raise_spec_problem raises the code with a message naming the value.');
select throws_ok($$select conductor._raise_spec_problem('timeout', conductor_tests.spec(timeout => '-5 seconds'))$$, 'QC106',
  'invalid timeout -00:00:05 for kind ''k'': it must be more than 0 and at most 30 days',
  'A timeout''s message names the value and the kind.');
select throws_ok($$select conductor._raise_spec_problem('dedupe_key', conductor_tests.spec(dedupe_key => repeat('d', 1001)))$$,
  'QC106', 'invalid dedupe_key ''' || repeat('d', 100) || '''…(1001 bytes): at most 1000 bytes',
  'A key''s message names the key, cut.');

create function pg_temp.detail_of(problem text, s conductor._task_spec, detail text) returns text language plpgsql as $$
declare
  v_detail text;
begin
  perform conductor._raise_spec_problem(problem, s, detail);
  return null;
exception when others then
  get stacked diagnostics v_detail = pg_exception_detail;
  return v_detail;
end
$$;
select is(pg_temp.detail_of('queue', conductor_tests.spec(queue => ''), 'task #3 of the batch'), 'task #3 of the batch',
  'The detail says where the spec came from.');
select is(pg_temp.detail_of('run_at', conductor_tests.spec(run_at => '-infinity'), 'task #2 of the batch'), 'task #2 of the batch',
  'The detail comes with a run_at error too.');

select * from finish();
rollback;
