-- cancel ends a task and every unfinished descendant in one call and returns how many it cancelled.
begin;
select plan(5);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.enqueue('root', '{}', 'tree-q') as root \gset
select conductor.enqueue('c1', '{}', 'tree-q', parent_id => :root) as c1 \gset
select conductor.enqueue('c2', '{}', 'tree-done', parent_id => :root) as c2 \gset
select conductor.enqueue('g1', '{}', 'tree-q', parent_id => :c1, run_at => '2030-02-01 00:00:00+00') as g1 \gset
select conductor.enqueue('g2', '{}', 'tree-q', parent_id => :c2) as g2 \gset
select conductor.enqueue('other', '{}', 'tree-q') as other \gset
select conductor_tests.claim_one('tree-done') as a2 \gset
select conductor.complete(:a2, '{"kept": true}') as done \gset
select conductor_tests.task(:c2) as c2_before \gset
select conductor_tests.task(:other) as other_before \gset

set local conductor.fake_now = '2030-01-01 00:01:00+00';
select is(conductor.cancel(:root), 4, 'cancel returns how many tasks it cancelled: the root, c1, g1, and g2 under a finished child.');
select results_eq(format('select id, status::text, finished_at, error from conductor.tasks where id in (%s, %s, %s, %s) order by id',
                         :root, :c1, :g1, :g2),
  format($$values (%s::bigint, 'cancelled'::text, '2030-01-01 00:01:00+00'::timestamptz, 'cancelled'::text),
                  (%s, 'cancelled', '2030-01-01 00:01:00+00', 'cancelled'), (%s, 'cancelled', '2030-01-01 00:01:00+00', 'cancelled'),
                  (%s, 'cancelled', '2030-01-01 00:01:00+00', 'cancelled')$$, :root, :c1, :g1, :g2),
  'Every unfinished task of the tree is cancelled and finished now, a future one included.');
select is(conductor_tests.task(:c2), :'c2_before'::jsonb, 'A finished child is untouched: it stays succeeded with its result.');
select is(conductor_tests.task(:other), :'other_before'::jsonb, 'A task outside the tree is untouched.');
select is(conductor.cancel(:root), 0, 'Cancelling again cancels nothing and returns 0.');

select * from finish();
rollback;
