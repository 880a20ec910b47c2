-- Plans made while the statistics said conductor.tasks and conductor.attempts
-- were empty, over pages that still hold rows, must still read only the rows a
-- call names. That is the state after a bulk delete or a prune under a long
-- transaction: ANALYZE counts no live row, VACUUM cannot remove the deleted
-- ones. Such a plan took each table for at most one row and walked its whole
-- primary key as the outer side of a nested loop, so every complete_many and
-- heartbeat read every row of both tables (87 ms for 25 tasks over 130,000
-- deleted rows; bench/HISTORY.md, issue 26's ninth part). Each statement now
-- bounds its index scans by the ids it was given.
--
-- Staged in one transaction: 600 tasks claimed, then deleted with their
-- attempts; ANALYZE (it counts this transaction's deleted rows as dead:
-- reltuples 0 over their pages); a first claim, heartbeat and complete_many
-- make the session's plans (the queue rate limited, so the claim goes through
-- its token step too); 600 more tasks claimed. A heartbeat, a complete_many
-- and a claim of five, their answers for five finished attempts, a fail and a
-- release of one, then fetch only about the rows they name
-- (pg_stat_xact_user_tables.idx_tup_fetch counts this transaction's fetches).
begin;
select plan(15);
\ir ../helpers.psql

select conductor.register_worker('plans-w', 'host', 1, null, 4, array['worker'], 'v', '{}');
select count(*) from conductor.enqueue_many(
  (select jsonb_agg(jsonb_build_object('kind', 'k', 'queue', 'plans-q')) from generate_series(1, 600)));
select count(*) from conductor.claim('plans-w', array['plans-q'], 600);
delete from conductor.attempts;
delete from conductor.tasks;
analyze conductor.tasks;
analyze conductor.attempts;

select is((select reltuples from pg_catalog.pg_class where oid = 'conductor.tasks'::regclass), 0::real,
  'The statistics say conductor.tasks is empty.');

-- the plans are made on those statistics, the claim's token step among them (a
-- queue cap would count the queue's running tasks: that is its cost by design)
select conductor.set_rate_limit(queue => 'plans-q', per_second => 1000000, burst => 1000000);
select conductor.enqueue('k', '{}', 'plans-q');
create temp table first_claim as select attempt_id from conductor.claim('plans-w', array['plans-q'], 1);
select count(*) from conductor.heartbeat('plans-w', (select array_agg(attempt_id) from first_claim));
select count(*) from conductor.complete_many((select array_agg(attempt_id) from first_claim));
select conductor.enqueue('k', '{}', 'plans-q');
select conductor.fail((select attempt_id from conductor.claim('plans-w', array['plans-q'], 1)), 'first');
select conductor.enqueue('k', '{}', 'plans-q');
select conductor.release((select attempt_id from conductor.claim('plans-w', array['plans-q'], 1)));
select count(*) from conductor.claim('plans-w', array['plans-q'], 1);  -- the released task, out of the way

select count(*) from conductor.enqueue_many(
  (select jsonb_agg(jsonb_build_object('kind', 'k', 'queue', 'plans-q')) from generate_series(1, 600)));
create temp table running as select attempt_id from conductor.claim('plans-w', array['plans-q'], 600);
create temp table five as select attempt_id from running order by attempt_id limit 5;

create function pg_temp.fetched() returns bigint language sql as $$
  select sum(s.idx_tup_fetch)::bigint from pg_catalog.pg_stat_xact_user_tables s
   where s.relid in ('conductor.tasks'::regclass, 'conductor.attempts'::regclass)
$$;

select pg_temp.fetched() as before_beat \gset
select is((select count(*) from conductor.heartbeat('plans-w', (select array_agg(attempt_id) from five))),
  0::bigint, 'The heartbeat extended the five leases (nothing to answer).');
select pg_temp.fetched() as after_beat \gset
select is((select count(*) from conductor.complete_many((select array_agg(attempt_id) from five))),
  0::bigint, 'complete_many stored the five results (nothing to answer).');
select pg_temp.fetched() as after_complete \gset

select count(*) from conductor.enqueue_many(
  (select jsonb_agg(jsonb_build_object('kind', 'k', 'queue', 'plans-q')) from generate_series(1, 5)));
select pg_temp.fetched() as before_claim \gset
select is((select count(*) from conductor.claim('plans-w', array['plans-q'], 5)), 5::bigint,
  'A claim (through the rate limit) took the five queued tasks.');
select pg_temp.fetched() as after_claim \gset

-- the answers of the attempts not stored or extended (the five finished): a statement of their own
select pg_temp.fetched() as before_answers \gset
select is((select count(*) from conductor.complete_many((select array_agg(attempt_id) from five))
            where state = 'finished'), 5::bigint, 'complete_many of the five again answers them finished.');
select is((select count(*) from conductor.heartbeat('plans-w', (select array_agg(attempt_id) from five))
            where state = 'finished'), 5::bigint, 'A heartbeat of the five answers them finished.');
select pg_temp.fetched() as after_answers \gset
select cmp_ok(:after_answers::bigint - :before_answers::bigint, '<=', 60::bigint,
  'Those answers fetched at most 60 rows of tasks and attempts by index, not 600.');

select is((select count(*) from conductor.tasks where queue = 'plans-q' and status = 'succeeded'),
  6::bigint, 'Six tasks finished: the first one and the five.');
select cmp_ok(:after_beat::bigint - :before_beat::bigint, '<=', 30::bigint,
  'The heartbeat fetched at most 30 rows of tasks and attempts by index, not 600.');
select cmp_ok(:after_complete::bigint - :after_beat::bigint, '<=', 30::bigint,
  'complete_many fetched at most 30 rows of tasks and attempts by index, not 600.');

select pg_temp.fetched() as before_fail \gset
select lives_ok($$select conductor.fail((select attempt_id from running order by attempt_id desc limit 1), 'boom')$$,
  'fail of one of the running tasks');
select pg_temp.fetched() as after_fail \gset
select cmp_ok(:after_fail::bigint - :before_fail::bigint, '<=', 10::bigint,
  'fail (through _held_task, the fence of fail, save_step, spawn and suspend) fetched at most 10 rows, not 600.');
select pg_temp.fetched() as before_release \gset
select lives_ok($$select conductor.release((select attempt_id from running order by attempt_id desc limit 1 offset 1))$$,
  'release of one of the running tasks');
select pg_temp.fetched() as after_release \gset
select cmp_ok(:after_release::bigint - :before_release::bigint, '<=', 10::bigint,
  'release fetched at most 10 rows, not 600.');
select cmp_ok(:after_claim::bigint - :before_claim::bigint, '<=', 60::bigint,
  'The claim fetched at most 60 rows of tasks and attempts by index, not 600.');

select * from finish();
rollback;
