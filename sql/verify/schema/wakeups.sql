-- Verify conductor:schema/wakeups on pg

begin;

select queue::text, worker_id::text, since::timestamptz from conductor.sleepers where false;
select task_id::bigint, pid::integer, since::timestamptz from conductor.result_waiters where false;

rollback;
