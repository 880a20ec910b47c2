-- register_worker records a worker and refreshes it on a second call; deregister_worker forgets it.
begin;
select plan(5);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.register_worker('w-reg', host => 'h1', pid => 10, queues => '{a,b}', concurrency => 8,
  version => '1.0', metadata => '{"zone": "eu"}') as r \gset
select is((select to_jsonb(w) from conductor.workers w where id = 'w-reg'),
  jsonb_build_object('id', 'w-reg', 'host', 'h1', 'pid', 10, 'queues', array['a', 'b'], 'concurrency', 8,
    'roles', array['worker'], 'version', '1.0', 'metadata', '{"zone": "eu"}'::jsonb, 'kinds', null,
    'started_at', '2030-01-01 00:00:00+00'::timestamptz, 'last_seen_at', '2030-01-01 00:00:00+00'::timestamptz,
    'owner', session_user::text),
  'A new worker is recorded with what it gave, roles {worker} by default, started and seen now, owned by the caller.');

set local conductor.fake_now = '2030-01-01 00:10:00+00';
select conductor.register_worker('w-reg', host => 'h2', pid => 11, roles => '{worker,scheduler}') as r2 \gset
select is((select jsonb_build_object('host', host, 'pid', pid, 'queues', queues, 'roles', roles, 'started_at', started_at,
    'last_seen_at', last_seen_at) from conductor.workers where id = 'w-reg'),
  jsonb_build_object('host', 'h2', 'pid', 11, 'queues', null, 'roles', array['worker', 'scheduler'],
    'started_at', '2030-01-01 00:00:00+00'::timestamptz, 'last_seen_at', '2030-01-01 00:10:00+00'::timestamptz),
  'Registering again refreshes every field and last_seen_at but keeps started_at.');
select is((select count(*) from conductor.workers where id = 'w-reg'), 1::bigint, 'There is still one row for the worker.');

select is(conductor.deregister_worker('w-reg'), true, 'deregister_worker answers true for a registered worker.');
select is(conductor.deregister_worker('w-reg'), false, 'and false when it is not registered (any more).');

select * from finish();
rollback;
