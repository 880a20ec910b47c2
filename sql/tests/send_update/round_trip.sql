-- An update's round trip: a run waits for update 'approve' (wait_update, as conductor_worker);
-- a client sends it (send_update, as conductor_client) and the run is woken with it
-- checkpointed; the replay's wait is ready with the same update; the run replies once
-- (reply_update: a second reply keeps the first); the client reads the reply (update_reply).
begin;
select plan(10);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';
create role t_up_worker;
grant conductor_worker to t_up_worker;
create role t_up_client;
grant conductor_client to t_up_client;

select conductor.enqueue('k', '{}', 'update-trip') as t \gset
set local role t_up_worker;
select attempt_id as a from conductor.claim('w1', array['update-trip']) \gset
select is((select state from conductor.wait_update(attempt_id => :a, step => 'update:approve', name => 'approve')), 'waiting',
  'The run waits for its update.');
reset role;

set local role t_up_client;
select conductor.send_update(task_id => :t, name => 'approve', payload => '{"amount": 5}') as u \gset
select is((select reply from conductor.update_reply(update_id => :u)), null, 'Until the run replies, the reply is NULL.');
reset role;
select is((select status::text from conductor.tasks where id = :t), 'queued', 'The send woke the waiting run.');

set local role t_up_worker;
select attempt_id as a2 from conductor.claim('w1', array['update-trip']) \gset
select results_eq(format($$select state, result->'payload' from conductor.wait_update(%s, 'update:approve', 'approve')$$, :a2),
  format($$values ('ready'::text, '{"update_id": %s, "name": "approve", "payload": {"amount": 5}}'::jsonb)$$, :u),
  'The replay''s wait is ready with the update, as checkpointed.');
select is(conductor.reply_update(attempt_id => :a2, update_id => :u, reply => '{"ok": true}'), '{"ok": true}'::jsonb,
  'The run replies.');
select is(conductor.reply_update(:a2, :u, '{"ok": false}'), '{"ok": true}'::jsonb,
  'A second reply (a replay) keeps the first.');
reset role;

set local conductor.fake_now = '2030-01-01 00:00:07+00';
set local role t_up_client;
select results_eq(format('select task_id, name, reply, replied_at from conductor.update_reply(%s)', :u),
  format($$values (%s::bigint, 'approve'::text, '{"ok": true}'::jsonb, '2030-01-01 00:00:00+00'::timestamptz)$$, :t),
  'The sender reads the reply and when it was given.');
-- a second update, sent before the run waits: its next wait takes it at once, the first is not taken again
select conductor.send_update(:t, 'approve', '{"amount": 6}') as u2 \gset
reset role;
set local role t_up_worker;
select results_eq(format($$select state, result->'payload'->'update_id' from conductor.wait_update(%s, 'update:approve#2', 'approve')$$, :a2),
  format($$values ('ready'::text, '%s'::jsonb)$$, :u2),
  'The run''s second wait takes the second update at once.');
select is((select state from conductor.wait_update(:a2, 'update:approve#3', 'approve')), 'waiting',
  'Its third wait waits: no third update was sent.');
reset role;
select is((select array_agg(ordinal order by id) from conductor.updates where task_id = :t), array[1, 2],
  'The updates of a name are numbered in the order sent.');

select * from finish();
rollback;
