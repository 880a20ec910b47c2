-- A rewound wait waits again: an event wait finds the same event at once (events are kept,
-- the first payload wins), a durable sleep sleeps its full duration from the replay.
begin;
select plan(4);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.enqueue('k', '{}', 'rewind-waits') as t \gset
select conductor_tests.claim_one('rewind-waits') as a \gset
select conductor.emit_event('rewind-waits-go', '{"v": 1}') as e \gset
select state from conductor.suspend(:a, 'event:go', 'event', event => 'rewind-waits-go') \gset
select state from conductor.suspend(:a, 'sleep', 'sleep', duration => '0 seconds') \gset
select conductor.complete(:a, '{}') as c \gset

set local conductor.fake_now = '2030-01-01 01:00:00+00';
select conductor.rewind(:t, 'event:go') as r \gset
select conductor_tests.claim_one('rewind-waits') as a2 \gset
select results_eq(format($$select state, result from conductor.suspend(%s, 'event:go', 'event', event => 'rewind-waits-go')$$, :a2),
  $$values ('ready'::text, '{"event": "rewind-waits-go", "payload": {"v": 1}}'::jsonb)$$,
  'The replay''s event wait is ready at once with the same event.');
select results_eq(format($$select state, result from conductor.suspend(%s, 'sleep', 'sleep', duration => '10 minutes')$$, :a2),
  $$values ('waiting'::text, null::jsonb)$$, 'The replay''s sleep sleeps again.');
select is((select result from conductor.steps where task_id = :t and name = 'sleep'), '{"until": "2030-01-01T01:10:00+00:00"}'::jsonb,
  'Its full duration from the replay.');
select is((select status::text from conductor.tasks where id = :t), 'waiting', 'The run waits.');

select * from finish();
rollback;
