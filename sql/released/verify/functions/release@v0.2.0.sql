-- Verify conductor:functions/release on pg

begin;

select conductor.enqueue('verify', queue => 'verify-release');
select conductor.release(c.attempt_id)
  from conductor.claim('verify-worker', array['verify-release']) c;
select 1 / (count(*) = 1)::int
  from conductor.tasks where queue = 'verify-release' and status = 'queued' and attempt = 0;

rollback;
