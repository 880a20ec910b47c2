-- cancel of a finished task changes nothing and returns 0; an unknown task raises QC203.
begin;
select plan(5);
\ir ../helpers.psql

select conductor.enqueue('k', '{}', 'cancel-fin') as t_ok \gset
select conductor.enqueue('k', '{}', 'cancel-fin') as t_failed \gset
select conductor_tests.claim_one('cancel-fin') as a1 \gset
select conductor_tests.claim_one('cancel-fin') as a2 \gset
select conductor.complete(:a1, '{"x": 1}') as d \gset
select conductor.fail(:a2, 'boom') as f \gset
select conductor_tests.task(:t_ok) as ok_before \gset
select conductor_tests.task(:t_failed) as failed_before \gset

select is(conductor.cancel(:t_ok), 0, 'Cancelling a succeeded task returns 0.');
select is(conductor_tests.task(:t_ok), :'ok_before'::jsonb, 'The succeeded task is unchanged.');
select is(conductor.cancel(:t_failed), 0, 'Cancelling a failed task returns 0.');
select is(conductor_tests.task(:t_failed), :'failed_before'::jsonb, 'The failed task is unchanged.');
select throws_ok('select conductor.cancel(-1)', 'QC203', 'task -1 does not exist',
  'Cancelling a task that does not exist is refused with QC203.');

select * from finish();
rollback;
