-- A queued task with a deadline to start answers, after its reasons (or 'ready'), a row
-- 'expires' whose until_at is that deadline; a task without one answers none. Read as
-- conductor_client.
begin;
select plan(2);
\ir ../helpers.psql
delete from conductor.workers;
set local conductor.fake_now = '2030-01-01 00:00:00+00';
select conductor.register_worker('ww-exp-w', queues => '{ww-exp}') as r \gset
select conductor.enqueue('k', '{}', 'ww-exp', run_at => '2030-01-01 01:00:00+00', expires_in => '10 minutes') as t \gset
select conductor.enqueue('k', '{}', 'ww-exp', run_at => '2030-01-01 01:00:00+00') as plain \gset

create role t_client;
grant conductor_client to t_client;
set local role t_client;
set local timezone = 'UTC';
select results_eq(format('select reason, detail, until_at from conductor.why_waiting(array[%s]::bigint[])', :t),
  $$values ('due_later'::text, 'due at 2030-01-01 01:00:00+00'::text, '2030-01-01 01:00:00+00'::timestamptz),
           ('expires'::text, 'expires at 2030-01-01 01:10:00+00 unless a worker starts it by then'::text,
            '2030-01-01 01:10:00+00'::timestamptz)$$,
  'A task due later says when it is due, then when it expires unless started.');
select results_eq(format('select reason from conductor.why_waiting(array[%s]::bigint[])', :plain),
  $$values ('due_later'::text)$$,
  'A task without a deadline says nothing of expiry.');
reset role;

select * from finish();
rollback;
