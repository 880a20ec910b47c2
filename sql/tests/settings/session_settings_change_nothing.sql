-- No setting a caller can SET changes what the engine does (issue 14, H1). With the
-- fake clock off, as it is in every production database, a worker that sets
-- conductor.fake_now moves no clock: reap keeps another worker's live lease, claim
-- leaves future tasks alone; a client that sets conductor.max_payload_bytes lifts no
-- limit. (pgtap.sh switches the fake clock on for the test database; this file
-- switches it off inside its own transaction.)
begin;
select plan(7);
\ir ../helpers.psql

update conductor.settings set fake_clock = false, max_payload_bytes = 100;

create role t_client;
create role t_worker;
grant conductor_client to t_client;
grant conductor_worker to t_worker;

select conductor.enqueue(kind => 'k', queue => 'h1-live') as live \gset
select c.attempt_id as held from conductor.claim(worker_id => 'honest', queues => array['h1-live'], max_tasks => 1, lease => interval '60 seconds') c \gset
select conductor.enqueue(kind => 'k', queue => 'h1-future', run_at => pg_catalog.now() + interval '1 day') as future \gset

set local role t_worker;
set local conductor.fake_now = '2999-01-01 00:00:00+00';
select is(conductor.now(), pg_catalog.now(), 'conductor.fake_now moves no clock while the fake clock is off.');
select is(conductor.reap(), 0, 'A worker that sets conductor.fake_now reaps no live lease.');
select is((select status::text from conductor.tasks where id = :live), 'running', 'The honest worker''s task is still running ...');
select lives_ok(format('select conductor.complete(attempt_id => %s)', :held), '... and its attempt still completes it.');
select is((select count(*) from conductor.claim(worker_id => 'thief', queues => array['h1-future'], max_tasks => 1, lease => interval '60 seconds')),
  0::bigint, 'claim takes no task due tomorrow, whatever conductor.fake_now says.');
reset conductor.fake_now;
reset role;

set local role t_client;
set local conductor.max_payload_bytes = 2000000000;
select throws_ok($$select conductor.enqueue(kind => 'k', queue => 'h1-big', payload => jsonb_build_object('s', repeat('x', 200)))$$,
  'QC103', null, 'A client that sets conductor.max_payload_bytes is still held to the configured limit.');
reset conductor.max_payload_bytes;
reset role;

update conductor.settings set fake_clock = true;
set local conductor.fake_now = '2999-01-01 00:00:00+00';
select is(conductor.now(), '2999-01-01 00:00:00+00'::timestamptz, 'Once an admin switches the fake clock on (tests), conductor.fake_now moves it.');

select * from finish();
rollback;
