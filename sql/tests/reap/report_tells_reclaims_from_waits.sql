-- reap_report answers what reap did, by kind: a lost worker's lease (a reclaim), one marked
-- dead, an attempt past its time limit, a wait that ended at its deadline; reap() their sum.
begin;
select plan(5);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.enqueue('k', '{}', 'rr-lost') as lost \gset
select conductor_tests.claim_one('rr-lost', 'w-crashed', '10 seconds') as a \gset
select conductor.enqueue('k', '{}', 'rr-dead', max_recoveries => 1) as dead \gset
select conductor_tests.claim_one('rr-dead', 'w-crashed', '10 seconds') as a \gset
select conductor.enqueue('k', '{}', 'rr-slow', timeout => '5 seconds') as slow \gset
select conductor_tests.claim_one('rr-slow', 'w-slow', '10 seconds') as a \gset
select conductor.enqueue('k', '{}', 'rr-sleep') as sleeper \gset
select conductor_tests.claim_one('rr-sleep', 'w-sleeper') as a \gset
select state from conductor.suspend(:a, 'nap', 'sleep', duration => '5 seconds');

set local conductor.fake_now = '2030-01-01 00:01:00+00';
select results_eq($$select leases_lost, leases_dead, leases_timed_out, runs_failed, waits_ended, kinds_swept
                      from conductor.reap_report()$$,
  $$values (2, 1, 1, 0, 1, 0)$$,
  'Two lost leases (one of them now dead), one timed-out attempt and one sleep that ended are counted apart.');
select is((select status from conductor.tasks where id = :sleeper), 'queued'::conductor.task_status,
  'The sleep that ended is queued again.');
select results_eq($$select leases_lost, leases_dead, leases_timed_out, runs_failed, waits_ended, kinds_swept
                      from conductor.reap_report()$$,
  $$values (0, 0, 0, 0, 0, 0)$$, 'A second report finds nothing to do.');

-- reap() answers the sum (leases_dead is among leases_lost)
select conductor_tests.claim_one('rr-lost', 'w-crashed-again', '10 seconds') as a \gset
select conductor_tests.claim_one('rr-sleep', 'w-sleeper') as a \gset
select state from conductor.suspend(:a, 'nap#2', 'sleep', duration => '5 seconds');
set local conductor.fake_now = '2030-01-01 00:02:00+00';
select is(conductor.reap(), 2, 'reap() answers the sum: one lost lease and one ended sleep.');
select is((select recoveries from conductor.tasks where id = :lost), 2, 'The lost task was taken back again.');

select * from finish();
rollback;
