-- pause_queue and resume_queue are an admin's: a role granted conductor_admin (not the
-- owner) pauses and resumes, recorded with when (the conductor clock) and who
-- (conductor._caller(): the role set, else the login); a worker or client role is refused
-- with 42501 and nothing changes.
begin;
select plan(9);
\ir ../helpers.psql
set local conductor.fake_now = '2031-03-01 12:00:00+00';

create role t_admin;
grant conductor_admin to t_admin;
create role t_worker;
grant conductor_worker to t_worker;
create role t_client;
grant conductor_client to t_client;

set local role t_admin;
select is(conductor.pause_queue('adm-q'), true, 'A conductor_admin role pauses a queue.');
select is((select paused_at from conductor.paused_queues where queue = 'adm-q'), '2031-03-01 12:00:00+00'::timestamptz,
  'paused_queues records when (conductor.now()).');
select is((select paused_by from conductor.paused_queues where queue = 'adm-q'), 't_admin',
  'And who: the role that called, not the function''s owner.');
reset role;

set local role t_worker;
select throws_ok($$select conductor.pause_queue('adm-other')$$, '42501', NULL,
  'A conductor_worker role cannot pause a queue.');
select throws_ok($$select conductor.resume_queue('adm-q')$$, '42501', NULL,
  'A conductor_worker role cannot resume one.');
reset role;
set local role t_client;
select throws_ok($$select conductor.pause_queue('adm-other')$$, '42501', NULL,
  'A conductor_client role cannot pause a queue.');
reset role;
select is((select count(*) from conductor.paused_queues where queue in ('adm-q', 'adm-other')), 1::bigint,
  'The refused calls changed nothing.');

set local role t_admin;
select is(conductor.resume_queue('adm-q'), true, 'A conductor_admin role resumes it.');
reset role;
select is((select count(*) from conductor.paused_queues where queue = 'adm-q'), 0::bigint, 'It is no longer paused.');

select * from finish();
rollback;
