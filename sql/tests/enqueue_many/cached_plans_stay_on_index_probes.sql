-- conductor._enqueue (enqueue_many, spawn, tick) keeps one plan per connection
-- (plan_cache_mode = force_generic_plan). A plan made while conductor.tasks was
-- empty must not scan it once it has grown: the parent's root and a dedupe
-- holder are looked up by key, and sequential and bitmap scans are off, so
-- every plan is an index probe whatever the statistics said. Staged in one
-- session: conductor.tasks truncated (no pages) and analysed; a plain batch
-- and a batch with a missing parent make their plans on it; a batch losing to
-- a dedupe holder makes the holder lookup's plan on one page; then 5,000 tasks
-- are written without ANALYZE. The next batch of 49 children and one task
-- losing to the holder must not scan conductor.tasks sequentially
-- (pg_stat_xact_user_tables counts this transaction's scans).
begin;
select plan(5);
\ir ../helpers.psql

truncate conductor.tasks cascade;
analyze conductor.tasks;

select count(*) from conductor.enqueue_many('[{"kind": "k", "queue": "plans-q"}]');
select throws_ok($$select conductor.enqueue_many('[{"kind": "k", "parent_id": 999999999}]')$$, 'QC203',
  'parent task 999999999 does not exist', 'A batch naming a missing parent is refused (its plan is made).');

create temp table parent as select conductor.enqueue('k', '{}', 'plans-q') as id;
select conductor.enqueue('k', '{}', 'plans-q', dedupe_key => 'plans-held');
select count(*) from conductor.enqueue_many('[{"kind": "k", "queue": "plans-q", "dedupe_key": "plans-held"}]');

select count(*) from conductor.enqueue_many(
  (select jsonb_agg(jsonb_build_object('kind', 'k', 'queue', 'plans-other'))
     from generate_series(1, 5000)));

select conductor_tests.seq_scans('tasks') as tasks_scans \gset

create temp table batch as
  select * from conductor.enqueue_many(
    (select jsonb_agg(case when i = 50
                           then jsonb_build_object('kind', 'k', 'queue', 'plans-q', 'dedupe_key', 'plans-held')
                           else jsonb_build_object('kind', 'k', 'queue', 'plans-q', 'parent_id', (select id from parent))
                      end order by i)
       from generate_series(1, 50) i)) with ordinality as b(id, n);

-- counted before the checks below, which scan conductor.tasks themselves
select conductor_tests.seq_scans('tasks') - :tasks_scans as new_tasks_scans \gset

select is((select count(*) from conductor.tasks t join batch b on b.id = t.id
            where b.n < 50 and t.parent_id = (select id from parent) and t.root_id = (select id from parent)),
  49::bigint, 'The 49 children were written under their parent''s run.');
select is((select b.id from batch b where b.n = 50),
  (select id from conductor.tasks where dedupe_key = 'plans-held'),
  'The 50th answered with the holder of its dedupe key.');
select is((select count(*) from conductor.tasks where dedupe_key = 'plans-held'), 1::bigint,
  'The dedupe key still has one task.');

select is(:new_tasks_scans::bigint, 0::bigint,
  'No sequential scan of conductor.tasks after it grew.');

select * from finish();
rollback;
