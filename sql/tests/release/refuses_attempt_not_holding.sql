-- release with an attempt that no longer holds its task is refused and changes nothing.
begin;
select plan(8);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.enqueue('k', '{}', 'rel-reaped') as t_reaped \gset
select conductor.enqueue('k', '{}', 'rel-done') as t_done \gset
select conductor.enqueue('k', '{}', 'rel-cancel') as t_cancel \gset
select conductor_tests.claim_one('rel-reaped', 'w1', '10 seconds') as a_reaped \gset
select conductor_tests.claim_one('rel-done') as a_done \gset
select conductor_tests.claim_one('rel-cancel') as a_cancel \gset
set local conductor.fake_now = '2030-01-01 00:00:20+00';
select conductor.reap() as reaped \gset
select conductor.complete(:a_done) as done \gset
select conductor.cancel(:t_cancel) as n \gset

create temp table snap as
select t.id, conductor_tests.task(t.id) as task, conductor_tests.attempt(t.attempt_id) as attempt
  from conductor.tasks t where t.id in (:t_reaped, :t_done, :t_cancel);

select throws_ok(format('select conductor.release(%s)', :a_reaped), 'QC201',
  format('attempt %s no longer holds task %s (attempt outcome: lost)', :a_reaped, :t_reaped),
  'A reaped attempt''s release is refused with QC201.');
select throws_ok(format('select conductor.release(%s)', :a_done), 'QC201', NULL,
  'A completed attempt''s release is refused with QC201.');
select throws_ok(format('select conductor.release(%s)', :a_cancel), 'QC202', NULL,
  'A cancelled task''s release is refused with QC202.');
select throws_ok('select conductor.release(-1)', 'QC203', 'attempt -1 does not exist',
  'An unknown attempt''s release is refused with QC203.');

select is(conductor_tests.task(:t_reaped), (select task from snap where id = :t_reaped),
  'The reaped task is unchanged: its attempt count is not given back twice.');
select is(conductor_tests.task(:t_done), (select task from snap where id = :t_done), 'The succeeded task is unchanged.');
select is(conductor_tests.task(:t_cancel), (select task from snap where id = :t_cancel), 'The cancelled task is unchanged.');
select set_eq(
  format('select conductor_tests.attempt(id) from conductor.attempts where id in (%s, %s, %s)', :a_reaped, :a_done, :a_cancel),
  'select attempt from snap',
  'No attempt row changed.');

select * from finish();
rollback;
