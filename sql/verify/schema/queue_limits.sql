-- Verify conductor:schema/queue_limits on pg

begin;

select queue, max_running, set_at, owner from conductor.queue_limits where false;
-- no role writes it but through set_queue_limit
select 1 / (not pg_catalog.has_table_privilege('conductor_worker', 'conductor.queue_limits', 'insert'))::int;

rollback;
