-- A re-claimed task comes with its steps' names in the order they were saved (step_order),
-- whatever order their names sort in, including a step a wake-up wrote; a first claim has
-- none (NULL). Claimed and saved as conductor_worker.
begin;
select plan(3);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';
update conductor.settings set fake_clock = true;

select conductor.enqueue('k', '{}', 'step-order') as t \gset
create role t_worker;
grant conductor_worker to t_worker;
set local role t_worker;
select results_eq($$select step_order from conductor.claim('w1', array['step-order'], 1, '1 second')$$,
  $$values (null::text[])$$, 'A first claim returns no step_order.');
reset role;
select attempt_id as a from conductor.tasks where id = :t \gset
set local role t_worker;
-- saved in an order no sort of the names gives; all at one fake instant
select conductor.save_step(:a, 'zeta', '1') as s1 \gset
select conductor.save_step(:a, 'alpha', '2') as s2 \gset
select conductor.save_step(:a, 'mid', '3') as s3 \gset
-- first write wins: its place stays
select conductor.save_step(:a, 'alpha', '99') as again \gset
select state from conductor.suspend(:a, 'event:go', 'event', event => 'step-order-go') \gset
reset role;
select conductor.emit_event('step-order-go', '{"x": 1}') as e \gset
set local role t_worker;
select results_eq($$select step_order from conductor.claim('w2', array['step-order'])$$,
  $$values (array['zeta', 'alpha', 'mid', 'event:go'])$$,
  'The resumed claim returns the names in saved order, the wake-up''s step last.');
reset role;
select is((select steps from conductor.claim('w3', array['step-order'])), null, 'Setup: nothing else to claim.');

select * from finish();
rollback;
