-- A task of a paused queue waits for resume_queue: why_waiting says queue_paused, with when
-- and by whom; its run_at reason is said too when it is also due later. Read as
-- conductor_client.
begin;
select plan(3);
\ir ../helpers.psql
set local timezone = 'UTC';
delete from conductor.workers;
set local conductor.fake_now = '2030-01-01 00:00:00+00';
select conductor.register_worker('ww-w', queues => '{ww-paused}') as r \gset
select conductor.enqueue('k', '{}', 'ww-paused') as t \gset
select conductor.enqueue('k', '{}', 'ww-paused', run_at => '2030-01-02 00:00:00+00') as later \gset
select conductor.pause_queue('ww-paused') as p \gset

create role t_client;
grant conductor_client to t_client;
set local role t_client;
select results_eq(format('select reason, detail from conductor.why_waiting(array[%s]::bigint[])', :t),
  format($$values ('queue_paused'::text, 'queue ''ww-paused'' is paused (since 2030-01-01 00:00:00+00, by %s)'::text)$$,
         replace(quote_literal(session_user), '''', '''''')),
  'A due task of a paused queue waits for the queue, and says since when and by whom.');
select results_eq(format('select reason from conductor.why_waiting(array[%s]::bigint[])', :later),
  $$values ('queue_paused'::text), ('due_later')$$,
  'A task of the paused queue due later says both, the pause first.');
reset role;

select conductor.resume_queue('ww-paused') as p \gset
set local role t_client;
select is((select reason from conductor.why_waiting(array[:t]::bigint[])), 'ready',
  'Once the queue resumes, the task is ready.');
reset role;

select * from finish();
rollback;
