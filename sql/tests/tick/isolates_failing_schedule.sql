-- One schedule that cannot fire does not stop the others: tick() fires each due schedule in
-- a subtransaction of its own; a failing one is skipped, its error recorded on the row
-- (last_error, last_error_at, shown by list_schedules), and it is tried again at the next
-- tick. Its first good fire clears the error.
begin;
select plan(10);
set local conductor.fake_now = '2030-01-01 00:00:30+00';

select conductor.create_schedule('a-poisoned', '* * * * *', 'k') as c \gset
select conductor.create_schedule('b-healthy', '* * * * *', 'k', queue => 'healthy') as c \gset
select conductor.create_schedule('c-poisoned-later', '* * * * *', 'k', dedupe_key => 'one') as c \gset
-- Made bad after the fact, as a v0.1.0 create_schedule could (or a hand edit): a padded
-- kind, and a dedupe key over the limit.
update conductor.schedules set kind = ' badkind' where name = 'a-poisoned';
update conductor.schedules set dedupe_key = repeat('d', 2000) where name = 'c-poisoned-later';

create role t_worker;
grant conductor_worker to t_worker;
create role t_client;
grant conductor_client to t_client;
set local role t_worker;
set local conductor.fake_now = '2030-01-01 00:01:00+00';

select results_eq($$select schedule_name from conductor.tick()$$, $$values ('b-healthy'::text)$$,
  'tick fires the healthy schedule although the ones before and after it raise.');
select is((select count(*) from conductor.tasks where kind = 'k' and queue = 'healthy'), 1::bigint,
  'The healthy schedule''s task was enqueued.');
select is((select count(*) from conductor.tasks where kind in (' badkind', 'k') and queue = 'default'), 0::bigint,
  'The failing schedules enqueued nothing.');
select is((select count(*) from conductor.schedule_fires where schedule_name <> 'b-healthy'), 0::bigint,
  'Nor recorded a fire: their subtransactions were rolled back.');
select alike((select last_error from conductor.schedules where name = 'a-poisoned'), 'QC101: invalid kind%',
  'The error is recorded on the schedule: SQLSTATE and message.');
select is((select last_error_at from conductor.schedules where name = 'c-poisoned-later'),
  '2030-01-01 00:01:00+00'::timestamptz, 'With the time of the failed tick.');
select is((select next_due_at from conductor.schedules where name = 'a-poisoned'),
  '2030-01-01 00:01:00+00'::timestamptz, 'A failed schedule keeps its due time, to be tried again.');

set local role t_client;
select is((select last_error is not null from conductor.list_schedules() where name = 'a-poisoned'), true,
  'list_schedules shows the error to a client.');

reset role;
update conductor.schedules set kind = 'k' where name = 'a-poisoned';
set local role t_worker;
set local conductor.fake_now = '2030-01-01 00:01:05+00';
select results_eq($$select schedule_name, due_at from conductor.tick()$$,
  $$values ('a-poisoned'::text, '2030-01-01 00:01:00+00'::timestamptz)$$,
  'Once mended it fires the due time it missed (within grace).');
select is((select (last_error, last_error_at)::text from conductor.schedules where name = 'a-poisoned'), '(,)',
  'A good fire clears the recorded error.');

reset role;
select * from finish();
rollback;
