-- conductor._spec_problem, the one validation of enqueue and enqueue_many: the SQLSTATE for each
-- kind of bad spec, NULL for a valid one; _raise_spec_problem raises it naming task #n.
begin;
select plan(9);
\ir ../helpers.psql

create function pg_temp.spec(kind text = 'k', payload jsonb = '{}', queue text = 'q', max_attempts integer = null,
                             backoff_factor double precision = null, dedupe_key text = null)
  returns conductor._task_spec language sql as $$
  select row(kind, payload, queue, null, null, max_attempts, dedupe_key, null, null, null, null,
             backoff_factor, null)::conductor._task_spec
$$;

select is(conductor._spec_problem(pg_temp.spec()), null, 'A valid spec has no problem.');
select is(conductor._spec_problem(pg_temp.spec(kind => ' k')), 'QC101', 'A padded kind is QC101.');
select is(conductor._spec_problem(pg_temp.spec(payload => '[1]')), 'QC102', 'An array payload is QC102.');
update conductor.settings set max_payload_bytes = 64;
select is(conductor._spec_problem(pg_temp.spec(payload => jsonb_build_object('s', repeat('x', 100)))), 'QC103',
  'A payload over conductor.settings.max_payload_bytes is QC103.');
update conductor.settings set max_payload_bytes = default;
select is(conductor._spec_problem(pg_temp.spec(queue => '')), 'QC104', 'An empty queue is QC104.');
select is(conductor._spec_problem(pg_temp.spec(max_attempts => 0)), 'QC106', 'max_attempts 0 is QC106.');
select is(conductor._spec_problem(pg_temp.spec(backoff_factor => 0.5)), 'QC106', 'A factor below 1 is QC106.');
select is(conductor._spec_problem(pg_temp.spec(kind => '', payload => '[]')), 'QC101',
  'With several problems, the first in the order kind, payload, size, queue, policy is named.');
select throws_ok($$select conductor._raise_spec_problem('QC102', 3, pg_temp.spec(payload => '"x"'))$$, 'QC102',
  'invalid payload for kind ''k'': a payload is a JSON object, got string',
  '_raise_spec_problem raises the code with a message naming the value.');

select * from finish();
rollback;
