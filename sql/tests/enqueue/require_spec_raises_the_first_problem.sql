-- conductor._require_spec(s, max_payload_bytes, detail), the check enqueue_many's fast path
-- makes on a row it is about to write: true for a valid spec; for a bad one it raises the
-- first problem conductor._spec_problem names, as conductor._raise_spec_problem words it,
-- with the detail given. Private: no application role may call it.
begin;
select plan(6);
\ir ../helpers.psql

select ok(conductor._require_spec(conductor_tests.spec(), 100, 'task #1 of the batch'),
  'A valid spec is true.');
select ok(conductor._require_spec(conductor_tests.spec(payload => '{"n": 1}'), 100, null),
  'A valid spec is true without a detail too.');
select throws_ok($$select conductor._require_spec(conductor_tests.spec(queue => 'bad queue'), 100, 'task #2 of the batch')$$,
  'QC104', 'invalid queue ''bad queue'': a queue name is 1-100 letters, digits and _ . : / -, starting with a letter or digit',
  'A bad queue raises QC104 with enqueue''s message.');
select throws_ok($$select conductor._require_spec(conductor_tests.spec(payload => jsonb_build_object('s', repeat('x', 200))), 100, 'x')$$,
  'QC103', NULL,
  'The payload limit given is the one applied.');

create function pg_temp.detail_of(statement text) returns text
  language plpgsql
as $$
declare
  v_detail text;
begin
  execute statement;
  return null;
exception when others then
  get stacked diagnostics v_detail = pg_exception_detail;
  return v_detail;
end
$$;
select is(pg_temp.detail_of($$select conductor._require_spec(conductor_tests.spec(kind => '', max_attempts => 0), 100,
                                                              'task #7 of the batch')$$),
  'task #7 of the batch', 'The detail says where the spec came from; the first problem (the kind) is raised.');

set local role conductor_client;
select throws_ok($$select conductor._require_spec(null::conductor._task_spec, 100, null)$$, '42501',
  'permission denied for function _require_spec', 'conductor_client may not call it.');
reset role;

select * from finish();
rollback;
