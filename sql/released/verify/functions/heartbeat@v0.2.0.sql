-- Verify conductor:functions/heartbeat on pg

begin;

select conductor.enqueue('verify', queue => 'verify-heartbeat');
select 1 / (count(*) = 0)::int
  from conductor.heartbeat('verify-worker',
         array(select c.attempt_id from conductor.claim('verify-worker', array['verify-heartbeat']) c));
select 1 / (count(*) = 1)::int from conductor.heartbeat('verify-worker', array[-1::bigint]);

rollback;
