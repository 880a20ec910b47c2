-- configure_kind, called as conductor_worker (to whom it is granted, with conductor_admin),
-- stores every field of a kind's row; a second call replaces the whole row (a field not given
-- is NULL: the engine default, not "unchanged"); a call equal to the stored row writes nothing.
begin;
select plan(5);
set local conductor.fake_now = '2030-01-01 00:00:00+00';

create role t_worker;
grant conductor_worker to t_worker;
set local role t_worker;

select lives_ok(
  $$select conductor.configure_kind('cfg.kind', max_attempts => 4, max_recoveries => 2,
                                    backoff_base => '10 seconds', backoff_factor => 3, backoff_max => '5 minutes',
                                    queue => 'cfg-q', priority => 5, concurrency_key => 'cfg-key',
                                    timeout => '90 seconds', retain_succeeded => '2 days',
                                    retain_failed => '90 days', concurrency_limit => 3,
                                    expires_in => '15 minutes')$$,
  'A worker configures a kind with every field.');
select is(
  (select to_jsonb(k) from conductor.kinds k where kind = 'cfg.kind'),
  jsonb_build_object('kind', 'cfg.kind', 'max_attempts', 4, 'max_recoveries', 2,
    'backoff_base', '00:00:10'::interval, 'backoff_factor', 3, 'backoff_max', '00:05:00'::interval,
    'queue', 'cfg-q', 'priority', 5, 'concurrency_key', 'cfg-key', 'timeout', '00:01:30'::interval,
    'retain_succeeded', '2 days'::interval, 'retain_failed', '90 days'::interval, 'concurrency_limit', 3,
    'expires_in', '00:15:00'::interval,
    'updated_at', '2030-01-01 00:00:00+00'::timestamptz, 'owner', 't_worker'),
  'Each argument is stored in its column, updated_at the clock''s time, owner the login that declared it.');

set local conductor.fake_now = '2030-01-01 00:01:00+00';
select conductor.configure_kind('cfg.kind', queue => 'cfg-other', timeout => '1 hour');
select is(
  (select to_jsonb(k) from conductor.kinds k where kind = 'cfg.kind'),
  jsonb_build_object('kind', 'cfg.kind', 'max_attempts', null, 'max_recoveries', null,
    'backoff_base', null, 'backoff_factor', null, 'backoff_max', null,
    'queue', 'cfg-other', 'priority', null, 'concurrency_key', null, 'timeout', '01:00:00'::interval,
    'retain_succeeded', null, 'retain_failed', null, 'concurrency_limit', null, 'expires_in', null,
    'updated_at', '2030-01-01 00:01:00+00'::timestamptz, 'owner', 't_worker'),
  'A second call replaces the whole row: what it does not give is NULL (the engine default).');

reset role;
select xmin::text as xmin_before from conductor.kinds where kind = 'cfg.kind' \gset
set local role t_worker;
set local conductor.fake_now = '2030-01-01 00:02:00+00';
select conductor.configure_kind('cfg.kind', queue => 'cfg-other', timeout => '1 hour');
reset role;
select is((select xmin::text from conductor.kinds where kind = 'cfg.kind'), :'xmin_before',
  'The same configuration again (a worker restarting) writes no new row version.');
select is((select updated_at from conductor.kinds where kind = 'cfg.kind'), '2030-01-01 00:01:00+00'::timestamptz,
  'And keeps updated_at.');

select * from finish();
rollback;
