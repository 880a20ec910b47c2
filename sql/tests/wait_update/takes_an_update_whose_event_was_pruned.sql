-- An update sent long before the run waits for it outlives its event, which prune() deletes
-- once old and waited for by no one: the run's wait emits it again from the update's row and
-- takes it at once.
begin;
select plan(3);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.enqueue('k', '{}', 'update-pruned') as t \gset
select conductor.send_update(:t, 'ask', '{"q": 1}') as u \gset
set local conductor.fake_now = '2030-03-01 00:00:00+00';
-- the reaper's passes clear the event's pending flag
select conductor.reap() as r \gset
select conductor.reap() as r2 \gset
select conductor.prune(interval '7 days') as p \gset
select conductor_tests.claim_one('update-pruned') as a \gset
select is((select count(*) from conductor.events where name like 'conductor.update:' || :t || ':%'), 0::bigint,
  'Setup: prune deleted the update''s old event; the update is still there.');
select results_eq(format($$select state, result->'payload' from conductor.wait_update(%s, 'update:ask', 'ask')$$, :a),
  format($$values ('ready'::text, '{"update_id": %s, "name": "ask", "payload": {"q": 1}}'::jsonb)$$, :u),
  'The run''s wait takes the update at once.');
select is((select count(*) from conductor.events where name = 'conductor.update:' || :t || ':1:ask'), 1::bigint,
  'Its event was emitted again.');

select * from finish();
rollback;
