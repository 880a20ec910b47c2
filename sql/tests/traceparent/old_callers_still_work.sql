-- traceparent is the last parameter of enqueue and spawn, with a default: callers that do
-- not name it (positional or named, as every v0.2.0 client calls) are unaffected, and
-- only one enqueue and one spawn exist, so no call is ambiguous.
begin;
select plan(5);
\ir ../helpers.psql

select is((select count(*) from pg_catalog.pg_proc p join pg_catalog.pg_namespace n on n.oid = p.pronamespace
            where n.nspname = 'conductor' and p.proname in ('enqueue', 'spawn')), 2::bigint,
  'One enqueue and one spawn: the signatures without traceparent are gone.');
select ok(conductor.enqueue('old.kind', '{"n": 1}', 'tp-old', 0, null, 1, null, null, null, 3,
                            interval '30 seconds', 2, interval '1 hour', interval '1 minute') > 0,
  'A positional call of the fourteen v0.2.0 parameters still enqueues.');
select ok(conductor.enqueue(kind => 'old.kind', payload => '{"n": 2}', queue => 'tp-old', timeout => '1 minute') > 0,
  'A named call without traceparent still enqueues.');
select conductor_tests.claim_one('tp-old') as a \gset
select ok(conductor.spawn(:a, 'kid', 'kid', '{}', 'tp-old-kids', 1, null, 1, null, null, 3) > 0,
  'A positional call of spawn''s eleven v0.2.0 parameters still spawns.');
select is((select count(*) from conductor.tasks where queue like 'tp-old%' and traceparent is null), 3::bigint,
  'Their tasks carry no traceparent.');

select * from finish();
rollback;
