-- parent_id places a task in its parent's run: root_id is the parent's root.
begin;
select plan(6);
\ir ../helpers.psql

select conductor.enqueue('root') as root \gset
select conductor.enqueue('child', parent_id => :root) as child \gset
select conductor.enqueue('grandchild', parent_id => :child) as grandchild \gset

select is((select root_id from conductor.tasks where id = :root), :root::bigint,
  'A task without a parent is its own root.');
select is((select (parent_id, root_id)::text from conductor.tasks where id = :child),
  format('(%s,%s)', :root, :root),
  'A child has its parent as parent_id and the parent''s root as root_id.');
select is((select (parent_id, root_id)::text from conductor.tasks where id = :grandchild),
  format('(%s,%s)', :child, :root),
  'A grandchild has the child as parent_id and the root of the whole run as root_id.');

create temp table before_count as select count(*) as n from conductor.tasks;
select throws_ok($$select conductor.enqueue('orphan', parent_id => -1)$$, 'QC203',
  'parent task -1 does not exist',
  'A parent_id that names no task is refused with QC203.');
select is((select count(*) from conductor.tasks) - (select n from before_count), 0::bigint,
  'The orphan wrote nothing.');

select array_agg(id) as batch from conductor.enqueue_many(format('[{"kind": "a", "parent_id": %s}, {"kind": "b", "parent_id": %s}]', :child, :grandchild)::jsonb) as e(id) \gset
select is((select array_agg(root_id order by id) from conductor.tasks where parent_id in (:child, :grandchild)),
  array[:root, :root, :root]::bigint[],
  'enqueue_many also gives each child its parent''s root.');

select * from finish();
rollback;
