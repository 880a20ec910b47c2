-- As conductor_worker: an attempt that does not exist (QC203), a result over
-- settings.max_result_bytes (QC107, nothing stored: the handler's writes roll back with
-- the transaction, unlike complete, which fails the task), an attempt already completed
-- (QC201), and an attempt of a worker another login registered (QC208).
begin;
select plan(6);
\ir ../helpers.psql

create role t_cit_worker;
grant conductor_worker to t_cit_worker;
create role t_cit_other;
grant conductor_worker to t_cit_other;
update conductor.settings set max_result_bytes = 100 where one;
select conductor.enqueue('k', queue => 'cit-bad') as t1 \gset
select conductor.enqueue('k', queue => 'cit-bad') as t2 \gset

set local role t_cit_worker;
select conductor.register_worker(worker_id => 'cit-w') as r1 \gset
select c.attempt_id as a1 from conductor.claim(worker_id => 'cit-w', queues => array['cit-bad']) c \gset
select throws_ok('select conductor.complete_in_transaction(-1)', 'QC203', null,
  'An attempt that does not exist is refused with QC203.');
select throws_ok(format('select conductor.complete_in_transaction(%s, %L)', :a1, jsonb_build_object('s', repeat('x', 200))),
  'QC107', null, 'A result over max_result_bytes is refused with QC107 ...');
reset role;
select is(conductor_tests.task(:t1)->>'status', 'running', '... and nothing changed: the task still runs.');
set local role t_cit_worker;
select lives_ok(format('select conductor.complete_in_transaction(%s, %L)', :a1, '{"ok": true}'),
  'A result under the limit completes the task.');
select throws_ok(format('select conductor.complete_in_transaction(%s)', :a1), 'QC201', null,
  'Completing the same attempt again is refused with QC201.');

select c.attempt_id as a2 from conductor.claim(worker_id => 'cit-w', queues => array['cit-bad']) c \gset
reset role;
set local role t_cit_other;
select throws_ok(format('select conductor.complete_in_transaction(%s)', :a2), 'QC208', null,
  'Another login cannot complete the attempt of a worker it did not register (QC208).');

reset role;
select * from finish();
rollback;
