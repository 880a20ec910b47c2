-- A schedule stored before v0.3.0 has no owner (NULL). The first login that declares it
-- again claims it, even unchanged (a worker restarting after the upgrade); from then on
-- another worker login gets QC208. An operator's schedule (declared_by 'admin') is not
-- claimed by a worker's unchanged re-declaration: QC207 already guards it.
begin;
select plan(8);
set local conductor.fake_now = '2030-01-01 00:00:00+00';

create role t_first;
grant conductor_worker to t_first;
create role t_second;
grant conductor_worker to t_second;

-- as v0.2.0 left them: a code schedule and an operator's, neither with an owner
select conductor.create_schedule('legacy-code', '0 * * * *', 'k') as c \gset
select conductor.create_schedule('legacy-ops', '0 4 * * *', 'k') as c \gset
update conductor.schedules set owner = null, declared_by = 'code', changed_by = 'old_worker'
 where name = 'legacy-code';
update conductor.schedules set owner = null where name = 'legacy-ops';
create temp table before as select name, to_jsonb(s) - 'owner' as row from conductor.schedules s;

set local conductor.fake_now = '2030-01-01 00:10:00+00';
set local role t_first;
select is((select owner from conductor.create_schedule('legacy-code', '0 * * * *', 'k', replace => true)), 't_first',
  'Re-declaring an unowned code schedule unchanged claims it for the login, and answers the row.');
select is((select owner from conductor.create_schedule('legacy-ops', '0 4 * * *', 'k', replace => true)), NULL,
  'Re-declaring an operator''s unowned schedule unchanged answers it and claims nothing.');
reset role;
select is((select jsonb_object_agg(name, to_jsonb(s) - 'owner') from conductor.schedules s),
  (select jsonb_object_agg(name, row) from before),
  'Claiming writes nothing but the owner: the schedule keeps its place, updated_at and changed_by.');

set local role t_second;
select throws_ok($$select conductor.create_schedule('legacy-code', '*/5 * * * *', 'k', replace => true)$$,
  'QC208', NULL, 'Once claimed, another worker login cannot change it: QC208.');
select lives_ok($$select conductor.create_schedule('legacy-code', '0 * * * *', 'k', replace => true)$$,
  'but may still re-declare it as stored.');
set local role t_first;
select is((select cron from conductor.create_schedule('legacy-code', '*/5 * * * *', 'k', replace => true)), '*/5 * * * *',
  'The claiming login changes it.');

-- a row from before, changed straight away: the changing login claims it
reset role;
update conductor.schedules set owner = null where name = 'legacy-code';
set local role t_second;
select is((select (cron, owner)::text from conductor.create_schedule('legacy-code', '0 * * * *', 'k', replace => true)),
  '("0 * * * *",t_second)', 'A change to an unowned code schedule claims it for the login that made it.');
set local role t_first;
select throws_ok($$select conductor.create_schedule('legacy-code', '*/5 * * * *', 'k', replace => true)$$,
  'QC208', NULL, 'and the first login to declare it again owns it from then on.');

reset role;
select * from finish();
rollback;
