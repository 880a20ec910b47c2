-- The root's kind's retention (configure_kind) overrides the settings' for its runs (a child
-- of another kind does not count); a NULL retention in the settings keeps such runs forever,
-- unless the root's kind sets one; retention 0 deletes a run as soon as it finished.
begin;
select plan(8);
\ir ../helpers.psql

create role t_worker;
grant conductor_worker to t_worker;

select conductor.configure_kind('ar.short', retain_succeeded => '1 hour', retain_failed => '2 hours');
select conductor.configure_kind('ar.long', retain_failed => '365 days');
select conductor.configure_kind('ar.zero', retain_succeeded => '0 seconds');
update conductor.settings set retain_succeeded = null;

set local conductor.fake_now = '2030-01-01 00:00:00+00';
select conductor.enqueue('ar.short', '{}', 'ar-kind') as short_ok \gset
select conductor_tests.claim_one('ar-kind') as att \gset
select conductor.enqueue('ar.long', '{}', 'ar-kind-child', parent_id => :short_ok) as short_child \gset
select conductor.complete(:att) as done \gset
select conductor.complete(conductor_tests.claim_one('ar-kind-child')) as done \gset
select conductor.enqueue('ar.short', '{}', 'ar-kind') as short_failed \gset
select conductor.fail(conductor_tests.claim_one('ar-kind'), 'boom') as failed \gset
select conductor.enqueue('ar.long', '{}', 'ar-kind') as long_failed \gset
select conductor.fail(conductor_tests.claim_one('ar-kind'), 'boom') as failed \gset
select conductor.enqueue('plain', '{}', 'ar-kind') as plain_ok \gset
select conductor.complete(conductor_tests.claim_one('ar-kind')) as done \gset
select conductor.enqueue('plain', '{}', 'ar-kind') as plain_failed \gset
select conductor.fail(conductor_tests.claim_one('ar-kind'), 'boom') as failed \gset

set local conductor.fake_now = '2030-01-01 01:30:00+00';
set local role t_worker;
select results_eq($$select what, deleted from conductor.apply_retention()$$,
  $$values ('succeeded_runs', 1::bigint), ('failed_runs', 0::bigint), ('events', 0::bigint), ('exclusive_locks', 0::bigint)$$,
  'After 90 minutes the succeeded run of ar.short (1 hour) goes, its ar.long child with it.');
reset role;
select is_empty(format('select from conductor.tasks where id in (%s, %s)', :short_ok, :short_child),
  'Root and child went: the root''s kind decides.');

set local conductor.fake_now = '2030-01-01 02:30:00+00';
set local role t_worker;
select results_eq($$select what, deleted from conductor.apply_retention()$$,
  $$values ('succeeded_runs', 0::bigint), ('failed_runs', 1::bigint), ('events', 0::bigint), ('exclusive_locks', 0::bigint)$$,
  'After 150 minutes the failed run of ar.short (2 hours) goes.');

set local conductor.fake_now = '2031-01-01 00:00:00+00';
select results_eq($$select what, deleted from conductor.apply_retention()$$,
  $$values ('succeeded_runs', 0::bigint), ('failed_runs', 1::bigint), ('events', 0::bigint), ('exclusive_locks', 0::bigint)$$,
  'A year on, the plain failed run goes (30 days), not the failed ar.long one (365 days).');
reset role;
select is((select count(*)::int from conductor.tasks where id in (:long_failed, :plain_ok)), 2,
  'The ar.long failed run stays, and so does the plain succeeded one: retain_succeeded NULL keeps it forever.');

set local conductor.fake_now = '2030-06-01 00:00:00+00';
select conductor.enqueue('ar.zero', '{}', 'ar-kind') as zero_ok \gset
select conductor.complete(conductor_tests.claim_one('ar-kind')) as done \gset
set local conductor.fake_now = '2030-06-01 00:00:00.000001+00';
set local role t_worker;
select results_eq($$select what, deleted from conductor.apply_retention()$$,
  $$values ('succeeded_runs', 1::bigint), ('failed_runs', 0::bigint), ('events', 0::bigint), ('exclusive_locks', 0::bigint)$$,
  'A retention of 0 deletes a run of ar.zero a microsecond after it finished, though the settings keep succeeded runs forever.');
reset role;

update conductor.settings set retain_failed = null;
set local conductor.fake_now = '2040-01-01 00:00:00+00';
set local role t_worker;
select results_eq($$select what, deleted from conductor.apply_retention()$$,
  $$values ('succeeded_runs', 0::bigint), ('failed_runs', 1::bigint), ('events', 0::bigint), ('exclusive_locks', 0::bigint)$$,
  'Ten years on the ar.long failed run goes (its kind''s 365 days beat the settings'' NULL).');
reset role;
select is((select count(*)::int from conductor.tasks where queue = 'ar-kind'), 1,
  'Only the plain succeeded run is left.');

select * from finish();
rollback;
