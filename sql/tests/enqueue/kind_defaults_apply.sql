-- A task enqueued without queue, priority, concurrency_key, timeout, max_attempts or
-- max_recoveries takes each from its kind (configure_kind), so
-- select conductor.enqueue('k', '{}') from psql lands where the kind's workers look.
-- Called as conductor_client, who may enqueue but not configure.
begin;
select plan(4);
set local conductor.fake_now = '2030-01-01 00:00:00+00';

create role t_worker;
grant conductor_worker to t_worker;
create role t_client;
grant conductor_client to t_client;

set local role t_worker;
select conductor.configure_kind('kd.kind', queue => 'q', priority => 5);
select conductor.configure_kind('kd.full', queue => 'kd-q', priority => -2, concurrency_key => 'kd-key',
                                timeout => '2 seconds', max_attempts => 6, max_recoveries => 0,
                                backoff_base => '1 second');

set local role t_client;
select conductor.enqueue('kd.kind', '{}') as plain \gset
select is((select (queue, priority)::text from conductor.tasks where id = :plain), '(q,5)',
  'After configure_kind(''k'', queue => ''q'', priority => 5), enqueue(''k'', ''{}'') lands on q with priority 5.');

select conductor.enqueue('kd.full') as full \gset
select is(
  (select jsonb_build_object('queue', queue, 'priority', priority, 'concurrency_key', concurrency_key,
     'timeout', timeout, 'max_attempts', max_attempts, 'max_recoveries', max_recoveries,
     'backoff_base', backoff_base)
     from conductor.tasks where id = :full),
  jsonb_build_object('queue', 'kd-q', 'priority', -2, 'concurrency_key', 'kd-key', 'timeout', '00:00:02'::interval,
     'max_attempts', 6, 'max_recoveries', 0, 'backoff_base', null),
  'Each of queue, priority, concurrency_key, timeout, max_attempts and max_recoveries is the kind''s; '
  || 'backoff stays NULL on the task (fail reads the kind''s at each failure).');

select conductor.enqueue('kd.unconfigured') as bare \gset
select is(
  (select (queue, priority, concurrency_key, timeout, max_attempts, max_recoveries)::text
     from conductor.tasks where id = :bare),
  '(default,0,,,1,3)', 'A kind without a row keeps the engine defaults.');

reset role;
select conductor.configure_kind('kd.kind', priority => 1);
set local role t_client;
select conductor.enqueue('kd.kind') as after \gset
select is((select (queue, priority)::text from conductor.tasks where id = :after), '(default,1)',
  'A kind configured again applies its new row: its queue no longer given is ''default''.');

reset role;
select * from finish();
rollback;
