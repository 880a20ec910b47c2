-- A child ending after its parent's wait deadline does not wake the parent: reap ends the
-- parent timed_out instead (the deadline is the parent's, not the children's).
begin;
select plan(3);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.enqueue('root', '{}', 'wake-late') as root \gset
select conductor_tests.claim_one('wake-late') as a \gset
select conductor.spawn(:a, 'c1', 'kid', '{}', 'wake-late-kids') as c1 \gset
select state from conductor.suspend(:a, 'join', 'children_all', timeout => '1 minute') \gset
select conductor_tests.claim_one('wake-late-kids', 'w1', '1 hour') as ca \gset

set local conductor.fake_now = '2030-01-01 00:01:00+00';
select conductor.complete(:ca, '"late"') as x \gset
select is((select (status, wait_for)::text from conductor.tasks where id = :root), '(waiting,children_all)',
  'A child ending at the parent''s deadline leaves the parent waiting.');
select is_empty(format($$select * from conductor.steps where task_id = %s and name = 'join'$$, :root),
  'No outcome is checkpointed for the parent.');
select conductor.reap() as r \gset
select is((select status::text from conductor.tasks where id = :root), 'timed_out',
  'reap then ends the parent timed_out.');

select * from finish();
rollback;
