-- Verify conductor:functions/complete on pg

begin;

select conductor.enqueue('verify', queue => 'verify-complete');
select conductor.complete(c.attempt_id, '{"ok": true}')
  from conductor.claim('verify-worker', array['verify-complete']) c;
select 1 / (count(*) = 1)::int
  from conductor.tasks where queue = 'verify-complete' and status = 'succeeded';

rollback;
