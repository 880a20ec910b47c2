-- stats() answers whatever is stored: rows written before run_at was checked (v0.1.0
-- accepted -infinity, infinity and years past 9999) do not make it raise. A ready task due
-- at -infinity counts as ready, its age measured from 0001-01-02; one due at infinity is
-- scheduled.
begin;
select plan(5);
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.enqueue('k', '{}', 'st-inf') as t1 \gset
select conductor.enqueue('k', '{}', 'st-inf') as t2 \gset
select conductor.enqueue('k', '{}', 'st-inf') as t3 \gset
-- written as the owner, as a v0.1.0 enqueue could
set local role conductor_owner;
update conductor.tasks set run_at = '-infinity' where id = :t1;
update conductor.tasks set run_at = 'infinity' where id = :t2;
update conductor.tasks set run_at = '50000-01-01 00:00:00+00' where id = :t3;
reset role;

create role t_client;
grant conductor_client to t_client;
set local role t_client;

select lives_ok($$select * from conductor.stats()$$, 'stats() answers with non-finite run_at values stored.');
select is((select s.ready from conductor.stats() s where s.queue = 'st-inf'), 1::bigint,
  'The task due at -infinity is ready.');
select is((select s.scheduled from conductor.stats() s where s.queue = 'st-inf'), 2::bigint,
  'The tasks due at infinity and in the year 50000 are scheduled.');
select is((select s.oldest_ready_age from conductor.stats() s where s.queue = 'st-inf'),
  '2030-01-01 00:00:00+00'::timestamptz - '0001-01-02 00:00:00+00'::timestamptz,
  'The backlog age is measured from 0001-01-02, the earliest time enqueue accepts.');
select isnt((select s.oldest_ready_age from conductor.stats() s where s.queue = 'st-inf'), null,
  'The backlog age is reported.');

reset role;
select * from finish();
rollback;
