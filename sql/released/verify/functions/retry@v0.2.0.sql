-- Verify conductor:functions/retry on pg

begin;

select conductor.cancel(conductor.enqueue('verify', queue => 'verify-retry'));
select conductor.retry(t.id) from conductor.tasks t where t.queue = 'verify-retry';
select 1 / (count(*) = 1)::int from conductor.tasks where queue = 'verify-retry' and status = 'queued';

rollback;
