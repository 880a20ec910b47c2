-- complete with an attempt that no longer holds its task is refused and changes nothing:
-- QC201 after reap or a previous complete, QC202 after cancel, QC203 for an unknown attempt.
begin;
select plan(12);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.enqueue('k', '{}', 'refuse-reaped') as t_reaped \gset
select conductor.enqueue('k', '{}', 'refuse-done') as t_done \gset
select conductor.enqueue('k', '{}', 'refuse-cancel') as t_cancel \gset
select conductor_tests.claim_one('refuse-reaped', 'w1', '10 seconds') as a_reaped \gset
select conductor_tests.claim_one('refuse-done') as a_done \gset
select conductor_tests.claim_one('refuse-cancel') as a_cancel \gset
set local conductor.fake_now = '2030-01-01 00:00:20+00';
select conductor.reap() as reaped \gset
select conductor.complete(:a_done, '{"first": true}') as done \gset
select conductor.cancel(:t_cancel) as n \gset

create temp table snap as
select t.id, conductor_tests.task(t.id) as task, conductor_tests.attempt(t.attempt_id) as attempt
  from conductor.tasks t where t.id in (:t_reaped, :t_done, :t_cancel);

-- after reap
select throws_ok(format('select conductor.complete(%s, %L)', :a_reaped, '{"late": true}'), 'QC201',
  format('attempt %s no longer holds task %s (attempt outcome: lost)', :a_reaped, :t_reaped),
  'A reaped attempt''s complete is refused with QC201, the message naming attempt, task and outcome.');
select is(conductor_tests.task(:t_reaped), (select task from snap where id = :t_reaped),
  'The reaped task is unchanged: still queued, no result.');
select is(conductor_tests.attempt(:a_reaped), (select attempt from snap where id = :t_reaped),
  'The lost attempt is unchanged.');

-- after another complete
select throws_ok(format('select conductor.complete(%s, %L)', :a_done, '{"second": true}'), 'QC201',
  format('attempt %s no longer holds task %s (attempt outcome: succeeded)', :a_done, :t_done),
  'A second complete of the same attempt is refused with QC201.');
select is(conductor_tests.task(:t_done), (select task from snap where id = :t_done),
  'The first result stays.');
select is(conductor_tests.attempt(:a_done), (select attempt from snap where id = :t_done),
  'The succeeded attempt is unchanged.');

-- after cancel
select throws_ok(format('select conductor.complete(%s, %L)', :a_cancel, '{}'), 'QC202',
  format('task %s was cancelled; attempt %s no longer holds it', :t_cancel, :a_cancel),
  'A cancelled task''s complete is refused with QC202.');
select is(conductor_tests.task(:t_cancel), (select task from snap where id = :t_cancel),
  'The cancelled task is unchanged: no result, still cancelled.');
select is(conductor_tests.attempt(:a_cancel), (select attempt from snap where id = :t_cancel),
  'The cancelled attempt is unchanged.');

-- unknown
select throws_ok('select conductor.complete(-1)', 'QC203', 'attempt -1 does not exist',
  'An attempt that does not exist is refused with QC203.');
select throws_ok('select conductor.complete(NULL)', 'QC203', NULL,
  'A NULL attempt is refused with QC203.');

select is((select count(*) from conductor.tasks where status = 'succeeded' and id in (:t_reaped, :t_cancel)), 0::bigint,
  'No refused complete stored a success.');

select * from finish();
rollback;
