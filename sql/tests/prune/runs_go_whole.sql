-- prune deletes runs whole: a succeeded root stays while a failed child of its
-- run is kept (include_failed off), and both go with include_failed.
begin;
select plan(3);
\ir ../helpers.psql

set local conductor.fake_now = '2030-01-01 00:00:00+00';
select conductor.enqueue('root', '{}', 'prune-whole') as root \gset
select conductor_tests.claim_one('prune-whole') as a_root \gset
select conductor.enqueue('child', '{}', 'prune-whole', parent_id => :root) as child \gset
select conductor.complete(:a_root) as done \gset
select conductor_tests.claim_one('prune-whole') as a_child \gset
select conductor.fail(:a_child, 'boom') as failed \gset

set local conductor.fake_now = '2030-02-01 00:00:00+00';
select is(conductor.prune('7 days'), 0::bigint,
  'Nothing goes while the run keeps a failed child: the succeeded root stays with it.');
select is((select count(*)::int from conductor.tasks where queue = 'prune-whole'), 2,
  'Root and child are both still there.');
select is(conductor.prune('7 days', include_failed => true), 2::bigint,
  'With include_failed the whole run goes.');

select * from finish();
rollback;
