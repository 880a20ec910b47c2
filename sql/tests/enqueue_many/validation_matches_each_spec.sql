-- conductor._spec_problems judges alike specs of a batch once, an object payload
-- under the limit standing for every such payload. It must name, in input
-- order, exactly what conductor._spec_problem names for each spec on its own:
-- staged here with a spec breaking each rule, the payload cases (object under
-- the limit, over it, array, string, JSON null, SQL NULL) and alike specs that
-- differ only in their payloads, in between valid ones.
begin;
select plan(4);
\ir ../helpers.psql

update conductor.settings set max_payload_bytes = 64;

create temp table specs as
select i as n, a.arr[i] as s
  from (select array[
  conductor_tests.spec(payload => '{"n": 1}'),
  conductor_tests.spec(payload => jsonb_build_object('s', repeat('x', 100))),   -- payload_size
  conductor_tests.spec(payload => '{"n": 2}'),
  conductor_tests.spec(payload => '[1]'),                                      -- payload
  conductor_tests.spec(payload => '"text"'),                                   -- payload
  conductor_tests.spec(payload => 'null'),                                     -- payload
  conductor_tests.spec(payload => null),                                       -- payload
  conductor_tests.spec(kind => ' k', payload => '{"n": 3}'),                   -- kind
  conductor_tests.spec(kind => '', payload => '[]'),                           -- kind before payload
  conductor_tests.spec(queue => '', payload => jsonb_build_object('s', repeat('y', 100))),  -- payload_size before queue
  conductor_tests.spec(queue => ''),                                           -- queue
  conductor_tests.spec(run_at => 'infinity'),
  conductor_tests.spec(max_attempts => 0),
  conductor_tests.spec(max_recoveries => -1),
  conductor_tests.spec(backoff_base => '31 days'),
  conductor_tests.spec(backoff_max => '-1 second'),
  conductor_tests.spec(backoff_factor => 'NaN'),
  conductor_tests.spec(backoff_base => '1 minute', backoff_max => '1 second'),
  conductor_tests.spec(timeout => '0 seconds'),
  conductor_tests.spec(dedupe_key => repeat('d', 1001)),
  conductor_tests.spec(concurrency_key => repeat('c', 1001)),
  conductor_tests.spec(traceparent => '00-0af7651916cd43dd8448eb211c80319c-B7AD6B7169203331-01'),
  conductor_tests.spec(traceparent => '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'),  -- valid
  conductor_tests.spec(payload => '{"n": 4}', dedupe_key => 'a'),
  conductor_tests.spec(payload => '{"n": 5}', dedupe_key => 'a'),
  conductor_tests.spec(payload => '{}')
  ] as arr) a, generate_subscripts(a.arr, 1) as i;

select is((select count(*) from specs where conductor._spec_problem(s, 64) is not null), 20::bigint,
  'The staged specs break 20 rules between them (the rest are valid).');

select is(
  (select array_agg(p.ord || ':' || p.problem order by p.ord)
     from conductor._spec_problems((select array_agg(s order by n) from specs)) p),
  (select array_agg(n || ':' || conductor._spec_problem(s, 64) order by n)
     from specs where conductor._spec_problem(s, 64) is not null),
  'The batch names each spec''s first problem, in input order, as the spec alone does.');

select is(
  (select array_agg(p.ord order by p.ord)
     from conductor._spec_problems(array_fill(conductor_tests.spec(payload => jsonb_build_object('big', repeat('z', 80))), array[3])
                                   || array_fill(conductor_tests.spec(), array[2])) p),
  array[1, 2, 3]::bigint[],
  'Specs alike but for an oversized payload are each named; the valid ones after them are not.');

select is(
  (select count(*) from conductor._spec_problems(
     (select array_agg(conductor_tests.spec(payload => jsonb_build_object('n', i))) from generate_series(1, 50) i))),
  0::bigint,
  'Fifty valid specs that differ in their payloads have no problem.');

select * from finish();
rollback;
