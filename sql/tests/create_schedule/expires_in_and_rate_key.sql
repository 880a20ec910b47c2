-- A schedule carries expires_in and rate_key: stored by create_schedule, kept by
-- update_schedule, shown by list_schedules, given to the task each fire makes (tick,
-- fire_schedule), so a fire not started that long after it was enqueued ends expired;
-- out of range is QC106. Without expires_in a fire takes its kind's (issue 30).
begin;
select plan(9);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.create_schedule('exp-s', '* * * * *', 'report', queue => 'exp-sq',
                                 expires_in => '30 seconds', rate_key => 'tenant-1') as r \gset
select is((select row(expires_in, rate_key)::text from conductor.list_schedules() where name = 'exp-s'),
  '(00:00:30,tenant-1)', 'create_schedule stores both; list_schedules shows them.');
select conductor.update_schedule('exp-s', priority => 2) as u \gset
select is((select row(expires_in, rate_key)::text from conductor.schedules where name = 'exp-s'),
  '(00:00:30,tenant-1)', 'update_schedule keeps them.');
select is((select row(s.expires_in, s.rate_key)::text
             from conductor.create_schedule('exp-s', '* * * * *', 'report', queue => 'exp-sq', priority => 2,
                                            expires_in => '30 seconds', rate_key => 'tenant-1', replace => true) s),
  '(00:00:30,tenant-1)', 'Declaring it again unchanged answers the row.');

select conductor.fire_schedule('exp-s') as fired \gset
select is((select row(expires_in, expires_at, rate_key)::text from conductor.tasks where id = :fired),
  '(00:00:30,"2030-01-01 00:00:30+00",tenant-1)',
  'A fire''s task (fire_schedule) carries the schedule''s expires_in, its deadline from now, and its rate_key.');

set local conductor.fake_now = '2030-01-01 00:01:00+00';
select count(*) from conductor.tick();
select is((select row(t.expires_in, t.expires_at, t.rate_key)::text
             from conductor.schedule_fires f join conductor.tasks t on t.id = f.task_id
            where f.schedule_name = 'exp-s' and not f.manual),
  '(00:00:30,"2030-01-01 00:01:30+00",tenant-1)', 'tick''s fire carries them too, the deadline from the tick.');
set local conductor.fake_now = '2030-01-01 00:01:31+00';
select is((select tasks_expired from conductor.reap_report()), 2,
  'Neither fire started within 30 seconds: the reaper ends both expired.');

select conductor.configure_kind('report.k', expires_in => '1 hour');
select conductor.create_schedule('exp-k', '* * * * *', 'report.k', queue => 'exp-sq') as r2 \gset
set local conductor.fake_now = '2030-01-01 00:02:00+00';
select count(*) from conductor.tick();
select is((select t.expires_in from conductor.schedule_fires f join conductor.tasks t on t.id = f.task_id
            where f.schedule_name = 'exp-k'), interval '1 hour',
  'A schedule without expires_in fires tasks with the kind''s.');

select throws_ok($$select conductor.create_schedule('exp-bad', '* * * * *', 'report', expires_in => '0')$$, 'QC106',
  'invalid expires_in 00:00:00 for kind ''report'': it must be more than 0 and at most 30 days',
  'An expires_in out of range is refused, as enqueue refuses it.');
select throws_ok($$select conductor.create_schedule('exp-bad', '* * * * *', 'report', rate_key => '')$$, 'QC106',
  'invalid rate_key '''' for kind ''report'': a key is 1 to 1000 bytes',
  'An empty rate_key is refused, as enqueue refuses it.');

select * from finish();
rollback;
