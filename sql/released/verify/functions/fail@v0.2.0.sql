-- Verify conductor:functions/fail on pg

begin;

select conductor.enqueue('verify', queue => 'verify-fail');
select 1 / (conductor.fail(c.attempt_id, 'boom') = 'failed')::int
  from conductor.claim('verify-worker', array['verify-fail']) c;
select conductor.enqueue('verify', queue => 'verify-fail-inf', max_attempts => 2);
do $$
begin
  perform conductor.fail(c.attempt_id, 'boom', retry_at => 'infinity')
     from conductor.claim('verify-worker', array['verify-fail-inf']) c;
  raise exception 'fail accepted retry_at infinity';
exception when sqlstate 'QC106' then
  null;
end
$$;

rollback;
