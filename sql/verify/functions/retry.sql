-- Verify conductor:functions/retry on pg

begin;

select conductor.cancel(conductor.enqueue('verify', queue => 'verify-retry'));
select conductor.retry(t.id) from conductor.tasks t where t.queue = 'verify-retry';
select 1 / (count(*) = 1)::int from conductor.tasks where queue = 'verify-retry' and status = 'queued';
-- a root retried starts its run's count of recoveries afresh
insert into conductor.run_recoveries (root_id, recoveries)
select t.id, 2 from conductor.tasks t where t.queue = 'verify-retry';
select conductor.cancel(t.id) from conductor.tasks t where t.queue = 'verify-retry';
select conductor.retry(t.id) from conductor.tasks t where t.queue = 'verify-retry';
select 1 / (not exists (select from conductor.run_recoveries r join conductor.tasks t on t.id = r.root_id
                         where t.queue = 'verify-retry'))::int;

rollback;
