-- deregister_worker leaves, for each kind of the worker it forgets, when it last served it
-- (conductor.served_kinds, upserted at now), so reap() does not call a kind unknown the
-- moment a rolling deploy stops its only worker. A worker without kinds leaves nothing.
-- Called as conductor_worker, the role it is granted to.
begin;
select plan(4);
\ir ../helpers.psql
delete from conductor.served_kinds;
set local conductor.fake_now = '2030-01-01 00:00:00+00';

create role t_worker;
grant conductor_worker to t_worker;
set local role t_worker;
select conductor.register_worker('w1', kinds => '{A,B}') as r \gset
select conductor.register_worker('w2', kinds => '{B,C}') as r \gset
select conductor.register_worker('w-every') as r \gset
select is(conductor.deregister_worker('w1'), true, 'deregister_worker forgets the worker.');
set local conductor.fake_now = '2030-01-01 00:10:00+00';
select conductor.deregister_worker('w2') as d \gset
select conductor.deregister_worker('w-every') as d \gset
select conductor.deregister_worker('w-unknown') as d \gset
reset role;

select results_eq($$select kind, last_served_at from conductor.served_kinds order by kind$$,
  $$values ('A'::text, '2030-01-01 00:00:00+00'::timestamptz), ('B', '2030-01-01 00:10:00+00'),
           ('C', '2030-01-01 00:10:00+00')$$,
  'Each kind of a deregistered worker was served until it left; a kind two workers served, until the later one left.');
select is((select count(*) from conductor.workers where id in ('w1', 'w2', 'w-every')), 0::bigint,
  'The workers rows are gone.');
select is((select count(*) from conductor.served_kinds), 3::bigint,
  'A worker without kinds, or one never registered, left no row.');

select * from finish();
rollback;
