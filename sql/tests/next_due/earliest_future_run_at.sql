-- next_due answers the earliest run_at after now of a queued task of the given queues
-- (NULL: every queue), whatever its priority; tasks due now, running tasks and other queues
-- do not count; NULL when nothing is due later. kinds narrows the answer to those kinds
-- when one of them is among the first tasks of a priority, else the earliest of any kind
-- answers (an early wake). Asked as conductor_worker, the role it is granted to. The fake
-- clock is in 2090, after anything another test may have committed.
begin;
select plan(10);
\ir ../helpers.psql
set local conductor.fake_now = '2090-01-01 00:00:00+00';

select conductor.enqueue('k', '{}', 'nd-1') as now_1 \gset
select conductor.enqueue('k', '{}', 'nd-1', run_at => '2090-01-01 00:00:10+00') as low \gset
select conductor.enqueue('k', '{}', 'nd-1', priority => 3, run_at => '2090-01-01 00:00:05+00') as high \gset
select conductor.enqueue('k', '{}', 'nd-1', priority => 3, run_at => '2090-01-01 00:00:07+00') as high2 \gset
select conductor.enqueue('k', '{}', 'nd-2', run_at => '2090-01-01 00:00:02+00') as other \gset
select conductor.enqueue('B', '{}', 'nd-3', run_at => '2090-01-01 00:00:01+00') as b \gset
select conductor.enqueue('A', '{}', 'nd-3', run_at => '2090-01-01 00:00:03+00') as a \gset
select conductor.enqueue('k', '{}', 'nd-4') as running \gset
select conductor_tests.claim_one('nd-4') as claimed \gset
select conductor.enqueue('k', '{}', 'nd-4', run_at => '2090-01-01 00:00:00.5+00') as soon \gset
select conductor.enqueue('k', '{}', 'nd-5') as due_only \gset

create role t_worker;
grant conductor_worker to t_worker;
set local role t_worker;

select is(conductor.next_due(array['nd-1']), '2090-01-01 00:00:05+00'::timestamptz,
  'The earliest future task of the queue, found across its priorities (3 before 0).');
select is(conductor.next_due(array['nd-1', 'nd-2']), '2090-01-01 00:00:02+00'::timestamptz,
  'Of several queues, the earliest of all.');
select is(conductor.next_due(), '2090-01-01 00:00:00.5+00'::timestamptz,
  'Of every queue when queues is NULL.');
select is(conductor.next_due(array['nd-5']), null::timestamptz,
  'NULL for a queue with only tasks due now: those are to claim, not to wait for.');
select is(conductor.next_due(array['nd-none']), null::timestamptz,
  'NULL for a queue with nothing queued.');
select is(conductor.next_due(array['nd-3'], array['A']), '2090-01-01 00:00:03+00'::timestamptz,
  'With kinds, the earliest task of those kinds.');
select is(conductor.next_due(array['nd-3'], array['C']), '2090-01-01 00:00:01+00'::timestamptz,
  'None of the kinds among the first tasks: the earliest of any kind (an early wake is harmless).');
select throws_ok($$select conductor.next_due('{}')$$, 'QC104', NULL, 'An empty queue list is refused with QC104.');
select throws_ok($$select conductor.next_due(null, '{}')$$, 'QC101', NULL, 'An empty kinds list is refused with QC101.');

set local conductor.fake_now = '2090-01-01 00:00:05+00';
select is(conductor.next_due(array['nd-1']), '2090-01-01 00:00:07+00'::timestamptz,
  'Once the earliest is due, the next one after now answers.');
reset role;

select * from finish();
rollback;
