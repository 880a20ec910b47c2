-- prune() deletes events emitted before its cutoff, older_than before now, in batches of at most
-- batch, and counts them in its answer with the tasks; newer events stay, and so does an event a
-- task still waits for (a state emit_event never leaves: it wakes every waiter; built by hand here).
begin;
select plan(9);
\ir ../helpers.psql

set local conductor.fake_now = '2030-01-01 00:00:00+00';
select conductor.emit_event('pr-ev-old-1') as n \gset
select conductor.emit_event('pr-ev-old-2') as n \gset
select conductor.emit_event('pr-ev-old-3') as n \gset
select conductor.enqueue('k', '{}', 'pr-ev') as old_task \gset
select conductor.complete(conductor_tests.claim_one('pr-ev'), '{}');
select conductor.enqueue('k', '{}', 'pr-ev') as waiter \gset
select state from conductor.suspend(conductor_tests.claim_one('pr-ev'), 'approval', 'event', 'pr-ev-awaited') \gset
insert into conductor.events (name, payload, emitted_at) values ('pr-ev-awaited', '{}', conductor.now());
set local conductor.fake_now = '2030-01-07 00:00:00+00';
select conductor.emit_event('pr-ev-new') as n \gset
set local conductor.fake_now = '2030-01-09 00:00:00+00';
-- the reaper would have confirmed them long ago (keeps_pending_events.sql: until then they stay)
update conductor.events set pending = false;

select is(conductor.prune(older_than => interval '7 days', batch => 2), 3::bigint,
  'The first call deletes the old task and a batch of two old events, and counts all three.');
select is((select count(*) from conductor.events where name like 'pr-ev-old-%'), 1::bigint,
  'One old event is left for the next call.');
select is(conductor.prune(older_than => interval '7 days', batch => 2), 1::bigint,
  'The next call deletes the last old event: an answer under batch means nothing old is left.');
select is(conductor.prune(older_than => interval '7 days', batch => 2), 0::bigint,
  'A third call finds nothing.');
select is((select count(*) from conductor.tasks where id = :old_task), 0::bigint, 'The old task is gone.');
select is_empty($$select * from conductor.events where name like 'pr-ev-old-%'$$, 'Every old event is gone.');
select is((select emitted_at from conductor.events where name = 'pr-ev-new'), '2030-01-07 00:00:00+00'::timestamptz,
  'An event emitted after the cutoff stays.');
select is((select count(*) from conductor.events where name = 'pr-ev-awaited'), 1::bigint,
  'An old event that a waiting task waits for stays.');
select is((select status::text from conductor.tasks where id = :waiter), 'waiting', 'Its waiter still waits.');

select * from finish();
rollback;
