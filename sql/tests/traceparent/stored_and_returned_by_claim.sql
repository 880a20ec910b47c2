-- enqueue stores the caller's W3C traceparent with the task and claim returns it, so the
-- worker's span continues the enqueuer's trace; a task enqueued without one has NULL, and
-- retry keeps the stored context (the run is the same request's).
begin;
select plan(5);
\ir ../helpers.psql

select 'tp-claim-' || pg_backend_pid() as q \gset
select conductor.enqueue('traced', '{}', :'q',
  traceparent => '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01') as traced \gset
select conductor.enqueue('plain', '{}', :'q', priority => -1) as plain \gset

select is((select traceparent from conductor.tasks where id = :traced),
  '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
  'enqueue stores the traceparent on the task.');
select is((select traceparent from conductor.tasks where id = :plain), null,
  'A task enqueued without one has NULL.');

create temp table claimed as
select * from conductor.claim('tp-worker', array[:'q'], 2);
select results_eq($$select task_id, traceparent from claimed order by task_id$$,
  format($$values (%s::bigint, '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'::text), (%s, null)$$,
         :traced, :plain),
  'claim returns each task''s traceparent (NULL for the untraced one).');
select is((select traceparent from claimed where task_id = :traced),
  (select t.traceparent from conductor.tasks t where t.id = :traced),
  'What claim returns is what was stored.');

select conductor.fail((select attempt_id from claimed where task_id = :traced), 'boom');
select conductor.retry(:traced);
select is((select traceparent from conductor.claim('tp-worker', array[:'q'], 1)),
  '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
  'A retried task keeps the stored traceparent.');

select * from finish();
rollback;
