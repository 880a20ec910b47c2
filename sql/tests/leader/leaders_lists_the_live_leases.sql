-- leaders() answers from the lease table: every live lease (names NULL) or those named, in
-- the order named, with the holder, its login, since, renewed_at, expires_at, and the pid
-- and application_name of the backend that last renewed it; an expired or released lease
-- is not listed. Called as conductor_client, a role it is granted to.
begin;
select plan(6);
\ir ../helpers.psql

create role t_leaders_worker;
grant conductor_worker to t_leaders_worker;
set local role t_leaders_worker;
set local application_name = 'leaders-test';
set local conductor.fake_now = '2030-01-01 00:00:00+00';
select conductor.try_lead('retention', 'proc-1', interval '30 seconds') as r \gset
select conductor.try_lead('scheduler', 'proc-1', interval '30 seconds') as r \gset
select conductor.try_lead('singleton:feed', 'proc-2', interval '5 seconds') as r \gset
reset role;

set local role conductor_client;
select results_eq($$select name, holder, login, since, renewed_at, expires_at, pid, application_name from conductor.leaders()$$,
  $$values ('retention'::text, 'proc-1'::text, 't_leaders_worker'::text, '2030-01-01 00:00:00+00'::timestamptz,
            '2030-01-01 00:00:00+00'::timestamptz, '2030-01-01 00:00:30+00'::timestamptz, pg_backend_pid(), 'leaders-test'::text),
           ('scheduler', 'proc-1', 't_leaders_worker', '2030-01-01 00:00:00+00', '2030-01-01 00:00:00+00',
            '2030-01-01 00:00:30+00', pg_backend_pid(), 'leaders-test'),
           ('singleton:feed', 'proc-2', 't_leaders_worker', '2030-01-01 00:00:00+00', '2030-01-01 00:00:00+00',
            '2030-01-01 00:00:05+00', pg_backend_pid(), 'leaders-test')$$,
  'Without names, every live lease, by name, with its holder, login, times and last backend.');
select results_eq($$select name from conductor.leaders(array['singleton:feed', 'scheduler', 'reaper'])$$,
  $$values ('singleton:feed'::text), ('scheduler')$$,
  'With names, the live ones among them in the order named; a name nobody holds has no row.');

set local conductor.fake_now = '2030-01-01 00:00:05+00';
select results_eq($$select name from conductor.leaders()$$, $$values ('retention'::text), ('scheduler')$$,
  'An expired lease is not listed.');
reset role;

set local role t_leaders_worker;
select is(conductor.release_lead('scheduler', 'proc-1'), true, 'A holder releases its lease') as r;
reset role;
set local role conductor_client;
select results_eq($$select name from conductor.leaders()$$, $$values ('retention'::text)$$,
  'and it is no longer listed.');
select throws_ok($$select conductor.try_lead('scheduler', 'c', interval '1 minute')$$, '42501', NULL,
  'A client cannot take a lease.');
reset role;

select * from finish();
rollback;
