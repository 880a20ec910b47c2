-- Verify conductor:schema/workers on pg

begin;

select id, host, pid, queues, concurrency, roles, version, metadata,
       started_at, last_seen_at
  from conductor.workers
 where false;

rollback;
