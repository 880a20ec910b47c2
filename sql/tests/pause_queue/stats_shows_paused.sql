-- stats() has a paused column: true for a paused queue, also one without tasks, false for
-- the others. A paused queue's tasks are not unrunnable for being paused (a live worker
-- serves it), and reap()'s unknown-kind sweep leaves them queued even when their kind is
-- unknown: unrunnable() gives them no dead_letter_at. Once resumed, the sweep applies.
begin;
select plan(9);
\ir ../helpers.psql
set local conductor.fake_now = '2031-02-01 00:00:00+00';
update conductor.settings set unknown_kind_after = interval '5 minutes';
delete from conductor.workers;
update conductor.maintenance set unknown_kinds_swept_at = null;  -- whatever a committed test left

select conductor.register_worker('sp-w', queues => '{sp-a,sp-b}', kinds => '{known}') as r \gset
select conductor.enqueue('known', '{}', 'sp-a') as known \gset
select conductor.enqueue('typo', '{}', 'sp-a') as typo \gset
select conductor.enqueue('known', '{}', 'sp-b') as b1 \gset
select conductor.pause_queue('sp-a') as pa \gset
select conductor.pause_queue('sp-empty') as pe \gset

select results_eq($$select queue, paused from conductor.stats() where queue like 'sp-%'$$,
  $$values ('sp-a'::text, true), ('sp-b', false), ('sp-empty', true)$$,
  'stats() shows each queue''s paused state, a paused queue without tasks included.');
select is((select ready from conductor.stats() where queue = 'sp-a'), 2::bigint,
  'A paused queue''s tasks still count as ready.');
select is((select unrunnable from conductor.stats() where queue = 'sp-a'), 1::bigint,
  'Only the task of a kind no worker serves is unrunnable: paused is not unserved.');
select is((select dead_letter_at from conductor.unrunnable() where queue = 'sp-a' and kind = 'typo'), null::timestamptz,
  'unrunnable() gives a paused queue''s task no dead-letter time.');

-- long after, the worker still alive: the sweep runs
set local conductor.fake_now = '2031-02-01 01:00:00+00';
select count(*) from conductor.heartbeat('sp-w', '{}') \gset
select conductor.reap() as reaped \gset
select is((select status::text from conductor.tasks where id = :typo), 'queued',
  'The sweep leaves a paused queue''s task of an unknown kind queued.');
select is((select status::text from conductor.tasks where id = :known), 'queued',
  'And its other tasks.');

select conductor.resume_queue('sp-a') as ra \gset
select isnt((select dead_letter_at from conductor.unrunnable() where queue = 'sp-a' and kind = 'typo'), null::timestamptz,
  'Resumed, unrunnable() gives it a dead-letter time again.');
update conductor.maintenance set unknown_kinds_swept_at = null;
select conductor.reap() as reaped \gset
select is((select status::text from conductor.tasks where id = :typo), 'dead',
  'And the next sweep dead-letters it.');
select is((select status::text from conductor.tasks where id = :known), 'queued',
  'A task of a served kind stays queued.');

select * from finish();
rollback;
