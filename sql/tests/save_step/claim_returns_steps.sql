-- A re-claimed task comes with its checkpointed steps ({name: result}), so a resumed run skips them.
begin;
select plan(3);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.enqueue('k', '{}', 'save-claim') as t \gset
select results_eq($$select steps from conductor.claim('w1', array['save-claim'], 1, '1 second')$$,
  $$values ('{}'::jsonb)$$,
  'A first claim returns no steps.');
select attempt_id as a from conductor.tasks where id = :t \gset
select conductor.save_step(:a, 'charge', '{"id": "ch_1"}') as s1 \gset
select conductor.save_step(:a, 'reserve', '[1, 2]') as s2 \gset
select conductor.save_step(:a, 'note') as s3 \gset

-- the worker dies; reap takes the task back and another worker claims it
set local conductor.fake_now = '2030-01-01 00:00:10+00';
select conductor.reap() as r \gset
select results_eq($$select steps from conductor.claim('w2', array['save-claim'])$$,
  $$values ('{"charge": {"id": "ch_1"}, "reserve": [1, 2], "note": null}'::jsonb)$$,
  'The re-claim returns every finished step as {name: result}.');
select is((select claimed_by from conductor.tasks where id = :t), 'w2', 'The second worker holds the task.');

select * from finish();
rollback;
