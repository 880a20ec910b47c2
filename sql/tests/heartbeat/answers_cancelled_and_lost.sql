-- heartbeat answers, for each attempt that no longer holds its task, 'cancelled', 'finished' or 'lost'.
begin;
select plan(4);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.enqueue('k', '{}', 'hb-held') as t_held \gset
select conductor.enqueue('k', '{}', 'hb-cancel') as t_cancel \gset
select conductor.enqueue('k', '{}', 'hb-lost') as t_lost \gset
select conductor.enqueue('k', '{}', 'hb-done') as t_done \gset
select conductor.enqueue('k', '{}', 'hb-foreign') as t_foreign \gset
select conductor_tests.claim_one('hb-lost', 'w1', '10 seconds') as a_lost \gset
set local conductor.fake_now = '2030-01-01 00:00:11+00';
select conductor.reap() as reaped \gset
select conductor_tests.claim_one('hb-held') as a_held \gset
select conductor_tests.claim_one('hb-cancel') as a_cancel \gset
select conductor_tests.claim_one('hb-done') as a_done \gset
select conductor_tests.claim_one('hb-foreign', 'w2') as a_foreign \gset
select conductor.cancel(:t_cancel) as n \gset
select conductor.complete(:a_done) as done \gset
select conductor_tests.task(:t_foreign) as foreign_before \gset

select set_eq(
  format($$select attempt_id, task_id, state from conductor.heartbeat('w1', array[%s, %s, %s, %s, %s, -1]::bigint[])$$,
         :a_held, :a_cancel, :a_lost, :a_done, :a_foreign),
  format($$values (%s::bigint, %s::bigint, 'cancelled'::text), (%s, %s, 'lost'), (%s, %s, 'finished'), (%s, %s, 'lost'), (-1, NULL, 'lost')$$,
         :a_cancel, :t_cancel, :a_lost, :t_lost, :a_done, :t_done, :a_foreign, :t_foreign),
  'Cancelled: ''cancelled''; completed by this worker: ''finished''; reaped, another worker''s and unknown attempts: ''lost''; the held one is not answered.');
select is((select lease_expires_at from conductor.tasks where id = :t_held), '2030-01-01 00:01:11+00'::timestamptz,
  'The held attempt''s lease was extended in the same call.');
select is(conductor_tests.task(:t_foreign), :'foreign_before'::jsonb,
  'A worker cannot extend another worker''s lease.');
select is((select status::text from conductor.tasks where id = :t_cancel), 'cancelled',
  'The cancelled task stays cancelled (no lease is put back).');

select * from finish();
rollback;
