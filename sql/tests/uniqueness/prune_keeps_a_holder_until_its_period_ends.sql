-- A finished task that holds its key for a dedupe_window is the key's arbiter until the
-- period ends: prune and apply_retention keep its run until dedupe_until, then delete it as
-- any other; a holder without a window ('infinity') is pruned as any other finished task.
begin;
select plan(6);
\ir ../helpers.psql
update conductor.settings set retain_succeeded = '1 hour';
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.enqueue('digest', '{}', 'up-q', dedupe_key => 'up:week', dedupe_window => '7 days') as weekly \gset
select conductor.complete(conductor_tests.claim_one('up-q')) as done \gset
select conductor.enqueue('digest', '{}', 'up-q', dedupe_key => 'up:ever',
                         dedupe_states => array['queued', 'running', 'waiting', 'succeeded']) as ever \gset
select conductor.complete(conductor_tests.claim_one('up-q')) as done \gset
select conductor.enqueue('digest', '{}', 'up-q') as plain \gset
select conductor.complete(conductor_tests.claim_one('up-q')) as done \gset
select dedupe_until as week_ends from conductor.tasks where id = :weekly \gset

set local conductor.fake_now = '2030-01-02 00:00:00+00';
select is(conductor.prune('1 minute'), 2::bigint, 'prune deletes the finished tasks whose key holds no period');
select is((select array_agg(id) from conductor.tasks where queue = 'up-q'), array[:weekly::bigint],
  'and keeps the weekly holder, whose period is not over.');
select is(conductor.enqueue('digest', '{}', 'up-q', dedupe_key => 'up:week', dedupe_window => '7 days'), :weekly::bigint,
  'So the key is still held.');
select is((select deleted from conductor.apply_retention() where what = 'succeeded_runs'), 0::bigint,
  'apply_retention keeps it too.');

set local conductor.fake_now to :'week_ends';
select is((select deleted from conductor.apply_retention() where what = 'succeeded_runs'), 1::bigint,
  'When the period ends, retention deletes it');
select isnt(conductor.enqueue('digest', '{}', 'up-q', dedupe_key => 'up:week', dedupe_window => '7 days'), :weekly::bigint,
  'and the next period''s enqueue writes a task.');

select * from finish();
rollback;
