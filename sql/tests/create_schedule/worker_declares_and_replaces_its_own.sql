-- A worker declares schedules from code: it may create one and replace one that code
-- declared (enabled => false included). Each row records who declared it (code or
-- admin) and which role last changed it.
begin;
select plan(7);
set local conductor.fake_now = '2030-01-01 00:00:00+00';

create role t_worker;
grant conductor_worker to t_worker;
set local role t_worker;

select lives_ok($$select conductor.create_schedule('from-code', '0 * * * *', 'report', replace => true)$$,
  'A worker creates a new schedule.');
select is((select (declared_by, changed_by)::text from conductor.schedules where name = 'from-code'),
  '(code,t_worker)', 'It is recorded as declared by code, changed by the worker''s role.');

set local conductor.fake_now = '2030-01-01 00:10:00+00';
select lives_ok($$select conductor.create_schedule('from-code', '30 * * * *', 'report', '{"v": 2}', replace => true)$$,
  'A worker replaces a schedule that code declared.');
select is((select (cron, payload, updated_at)::text from conductor.schedules where name = 'from-code'),
  (select ('30 * * * *', '{"v": 2}'::jsonb, '2030-01-01 00:10:00+00'::timestamptz)::text),
  'The replacement is stored.');
select lives_ok($$select conductor.create_schedule('from-code', '30 * * * *', 'report', '{"v": 2}',
                                                   enabled => false, replace => true)$$,
  'A worker may disable a schedule that code declared.');
select is((select (enabled, declared_by)::text from conductor.schedules where name = 'from-code'), '(f,code)',
  'It is off and still code''s.');

reset role;
select is((select declared_by from conductor.create_schedule('by-superuser', '0 * * * *', 'report')), 'admin',
  'A schedule created by a member of conductor_admin (here a superuser) is recorded as declared by admin.');

select * from finish();
rollback;
