-- configure_kind, called as conductor_worker, stores a kind's retention (retain_succeeded,
-- retain_failed: how long apply_retention keeps its finished runs; NULL: the settings'),
-- refuses a negative one with QC106 naming the kind and storing nothing; the floor a worker
-- login cannot go under (settings.min_retention) is retention_floor.sql's.
begin;
select plan(7);
set local conductor.fake_now = '2030-01-01 00:00:00+00';

create role t_worker;
grant conductor_worker to t_worker;
set local role t_worker;

select lives_ok(
  $$select conductor.configure_kind('ret.kind', retain_succeeded => '1 day', retain_failed => '90 days')$$,
  'A worker gives a kind its retention.');
select is(
  (select (retain_succeeded, retain_failed)::text from conductor.kinds where kind = 'ret.kind'),
  (interval '1 day', interval '90 days')::text,
  'Both retentions are stored in their columns.');
select conductor.configure_kind('ret.kind', retain_failed => '1 day');
select is(
  (select (retain_succeeded, retain_failed)::text from conductor.kinds where kind = 'ret.kind'),
  (null::interval, interval '1 day')::text,
  'A second call replaces both: retain_succeeded not given is NULL (the settings'').');
select throws_ok($$select conductor.configure_kind('ret.neg', retain_succeeded => '-1 second')$$, 'QC106',
  'invalid retention for kind ''ret.neg'': retain_succeeded -00:00:01 and retain_failed NULL must be 0 or more',
  'A negative retain_succeeded is refused with QC106, the message naming the kind and the values.');
select throws_ok($$select conductor.configure_kind('ret.neg', retain_failed => '1 month -31 days')$$, 'QC106', NULL,
  'A retain_failed that is negative as a whole (1 month less 31 days) is refused.');
select throws_ok($$select conductor.configure_kind('ret.kind', retain_failed => '-1 day')$$, 'QC106', NULL,
  'A negative retention for a configured kind is refused too.');
reset role;
select is(
  (select (count(*) filter (where kind = 'ret.neg'), max(retain_failed) filter (where kind = 'ret.kind'))::text
     from conductor.kinds),
  (0::bigint, interval '1 day')::text,
  'The refused calls stored nothing and left the configured kind as it was.');

select * from finish();
rollback;
