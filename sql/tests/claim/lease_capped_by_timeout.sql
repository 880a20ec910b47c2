-- A task's lease never passes its attempt's deadline: claim leases each task until
-- now + least(lease, timeout), and returns the timeout so the worker knows the limit.
begin;
select plan(3);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.enqueue('k', '{}', 'cap-q', priority => 3, timeout => '10 seconds') as short \gset
select conductor.enqueue('k', '{}', 'cap-q', priority => 2, timeout => '5 minutes') as long \gset
select conductor.enqueue('k', '{}', 'cap-q', priority => 1) as unlimited \gset

create role t_worker;
grant conductor_worker to t_worker;
set local role t_worker;
create temp table claimed as
select task_id, lease_expires_at, timeout from conductor.claim('w1', array['cap-q'], 3, '60 seconds');
reset role;

select results_eq($$select task_id, lease_expires_at, timeout from claimed$$,
  format($$values (%s::bigint, '2030-01-01 00:00:10+00'::timestamptz, '10 seconds'::interval),
                  (%s, '2030-01-01 00:01:00+00', '5 minutes'),
                  (%s, '2030-01-01 00:01:00+00', null)$$, :short, :long, :unlimited),
  'A timeout shorter than the lease ends the lease; a longer one or none leaves it; each row carries its timeout.');
select is((select lease_expires_at from conductor.tasks where id = :short), '2030-01-01 00:00:10+00'::timestamptz,
  'The task row holds the capped lease.');
select is((select pg_catalog.count(*) from conductor.tasks where queue = 'cap-q' and status = 'running'), 3::bigint,
  'All three are running.');

select * from finish();
rollback;
