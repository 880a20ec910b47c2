-- set_queue_limit writes one row per capped queue with its setter and time; the same cap
-- set again writes nothing; a changed cap is the new value at once; max_running NULL
-- removes it (no error when there is none) and the queue is claimed freely again.
begin;
select plan(6);
\ir ../helpers.psql
set local conductor.fake_now = '2032-07-02 00:00:00+00';

create role t_worker;
grant conductor_worker to t_worker;

set local role t_worker;
select conductor.set_queue_limit('ql-set', 2) as s \gset
reset role;
select results_eq($$select queue, max_running, set_at, owner from conductor.queue_limits where queue = 'ql-set'$$,
  $$values ('ql-set'::text, 2, '2032-07-02 00:00:00+00'::timestamptz, 't_worker'::text)$$,
  'A cap records its value, when and by whom.');

select xmin::text as xmin_before from conductor.queue_limits where queue = 'ql-set' \gset
set local conductor.fake_now = '2032-07-02 00:00:05+00';
set local role t_worker;
select conductor.set_queue_limit('ql-set', 2) as s \gset
reset role;
select is((select xmin::text from conductor.queue_limits where queue = 'ql-set'), :'xmin_before',
  'The same cap set again (a worker restarting) writes nothing.');

select count(*) from (select conductor.enqueue('k', '{}', 'ql-set') from generate_series(1, 6)) e \gset
select is((select count(*) from conductor.claim('w1', array['ql-set'], 10)), 2::bigint, 'A cap of 2 starts 2.');
select conductor.set_queue_limit(queue => 'ql-set', max_running => 3) as s \gset
select is((select count(*) from conductor.claim('w1', array['ql-set'], 10)), 1::bigint,
  'Raised to 3, one more starts.');
select conductor.set_queue_limit('ql-set') as s \gset
select is((select count(*) from conductor.claim('w1', array['ql-set'], 10)), 3::bigint,
  'Removed, the other 3 start.');
select lives_ok($$select conductor.set_queue_limit('ql-none', null)$$, 'Removing a cap that is not there is no error.');

select * from finish();
rollback;
