-- A task whose run still has an unfinished task stays: a finished child of an unfinished
-- root, and a finished root with an unfinished child.
begin;
select plan(5);
\ir ../helpers.psql

set local conductor.fake_now = '2030-01-01 00:00:00+00';
-- run 1: the root is still running, its child finished long ago
select conductor.enqueue('root', '{}', 'pr-r1') as root1 \gset
select conductor_tests.claim_one('pr-r1') as root1_attempt \gset
select conductor.enqueue('child', '{}', 'pr-r1c', parent_id => :root1) as child1 \gset
select conductor.complete(conductor_tests.claim_one('pr-r1c'), '{}');
-- run 2: the root finished long ago, a grandchild is still queued
select conductor.enqueue('root', '{}', 'pr-r2') as root2 \gset
select conductor.enqueue('child', '{}', 'pr-r2c', parent_id => :root2) as child2 \gset
select conductor.enqueue('grandchild', '{}', 'pr-r2g', parent_id => :child2) as grandchild2 \gset
select conductor.complete(conductor_tests.claim_one('pr-r2'), '{}');
select conductor.complete(conductor_tests.claim_one('pr-r2c'), '{}');
set local conductor.fake_now = '2030-02-01 00:00:00+00';

select is(conductor.prune(interval '7 days'), 0::bigint,
  'Nothing goes while each run has an unfinished task.');
select is((select count(*) from conductor.tasks where id in (:root1, :child1, :root2, :child2, :grandchild2)), 5::bigint,
  'Roots, children and the grandchild are all kept.');

-- finish both runs, long enough ago
set local conductor.fake_now = '2030-02-02 00:00:00+00';
select conductor.complete(:root1_attempt, '{}');
select conductor.complete(conductor_tests.claim_one('pr-r2g'), '{}');
set local conductor.fake_now = '2030-03-01 00:00:00+00';
select is(conductor.prune(interval '7 days', batch => 2), 2::bigint,
  'Once the runs finished, a batch of 2 deletes 2 tasks.');
select is(conductor.prune(interval '7 days', batch => 2), 2::bigint,
  'The next call deletes the next 2.');
select is(conductor.prune(interval '7 days', batch => 2), 1::bigint,
  'The last call returns less than the batch: the runs are gone.');

select * from finish();
rollback;
