-- conductor._reap_leases(), reap's first step, on its own: it takes back the expired
-- leases (a lost worker's task queued again, a timed-out attempt failed) and answers their
-- counts, and does nothing of the other steps: a sleep past its wake time still waits, a
-- stale worker is still there.
begin;
select plan(5);
\ir ../helpers.psql
delete from conductor.workers;
set local conductor.fake_now = '2030-01-01 00:00:00+00';
select conductor.register_worker('w-gone') as r \gset

select conductor.enqueue('k', '{}', 'leases-lost') as t_lost \gset
select conductor.enqueue('k', '{}', 'leases-to', timeout => '2 seconds') as t_to \gset
select conductor.enqueue('k', '{}', 'leases-sleep') as t_sleep \gset
select conductor_tests.claim_one('leases-lost', 'w-gone', '60 seconds') as a_lost \gset
select conductor_tests.claim_one('leases-to', 'w-gone', '60 seconds') as a_to \gset
select conductor_tests.claim_one('leases-sleep', 'w-gone', '60 seconds') as a_sleep \gset
select state from conductor.suspend(:a_sleep, 'nap', 'sleep', duration => '1 second') \gset

set local conductor.fake_now = '2030-01-01 01:00:00+00';
select results_eq('select leases_lost, leases_dead, leases_timed_out, runs_failed from conductor._reap_leases()',
  $$values (1, 0, 1, 0)$$,
  'It answers one lost lease and one timed-out attempt, none dead, no run failed.');
select is((select (status, recoveries)::text from conductor.tasks where id = :t_lost), '(queued,1)',
  'The lost worker''s task is queued again with recoveries 1.');
select is((select (status, error)::text from conductor.tasks where id = :t_to), '(failed,"timed out after 2 s")',
  'The timed-out task failed, its error naming the limit.');
select is((select status::text from conductor.tasks where id = :t_sleep), 'waiting',
  'A sleep past its wake time is not its business: it still waits.');
select is((select count(*)::integer from conductor.workers where id = 'w-gone'), 1,
  'A worker not seen for an hour is not its business either: it is still there.');

select * from finish();
rollback;
