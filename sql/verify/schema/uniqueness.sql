-- Verify conductor:schema/uniqueness on pg

begin;

select dedupe_states::text[], dedupe_until::timestamptz, debounce_until::timestamptz from conductor.tasks where false;
select ((null::conductor._task_spec).dedupe).dedupe_window::interval;
select 1 / pg_catalog.count(*)::int from pg_catalog.pg_indexes
 where schemaname = 'conductor' and indexname = 'tasks_dedupe_held';

rollback;
