-- Verify conductor:functions/fail on pg

begin;

select conductor.enqueue('verify', queue => 'verify-fail');
select 1 / (conductor.fail(c.attempt_id, 'boom') = 'failed')::int
  from conductor.claim('verify-worker', array['verify-fail']) c;

rollback;
