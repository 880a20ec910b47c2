-- conductor._reap_stale(stale_workers_after), reap's fourth step, on its own: it forgets
-- workers not seen for stale_workers_after (and, with unknown_kind_after set, for that long
-- at least) and the result waiters of sessions that ended, and leaves an expired lease and
-- a sleep past its wake time alone.
begin;
select plan(3);
\ir ../helpers.psql
delete from conductor.workers;
update conductor.settings set unknown_kind_after = null;
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.register_worker('w-old') as r1 \gset
select conductor.enqueue('k', '{}', 'stale-step') as t_lease \gset
select conductor_tests.claim_one('stale-step', 'w-old', '60 seconds') as a_lease \gset
insert into conductor.result_waiters (pid, task_id, since) values (0, :t_lease, conductor.now());
set local conductor.fake_now = '2030-01-01 00:05:00+00';
select conductor.register_worker('w-new') as r2 \gset

set local conductor.fake_now = '2030-01-01 00:10:00+00';
select conductor._reap_stale('6 minutes') as n \gset
select set_eq('select id from conductor.workers', $$values ('w-new')$$,
  'The worker not seen for more than stale_workers_after is forgotten; the recent one stays.');
select is_empty('select from conductor.result_waiters where pid = 0',
  'The result waiter of a session that ended is forgotten.');
select is((select status::text from conductor.tasks where id = :t_lease), 'running',
  'An expired lease is not its business: the task still runs.');

select * from finish();
rollback;
