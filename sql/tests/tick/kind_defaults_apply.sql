-- A fire's task takes what the schedule leaves NULL (max_attempts, concurrency_key) and what
-- it does not store (max_recoveries, timeout) from its kind (configure_kind). Its queue and
-- priority are the schedule's: stored NOT NULL ('default' and 0 unless given).
begin;
select plan(2);
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.configure_kind('tk.kind', queue => 'tk-kind-q', priority => 5, concurrency_key => 'tk-key',
                                timeout => '20 seconds', max_attempts => 4, max_recoveries => 1);
select conductor.create_schedule('tk-plain', '0 * * * *', 'tk.kind') as c \gset
select conductor.create_schedule('tk-own', '0 * * * *', 'tk.kind', queue => 'tk-own-q', priority => 2,
                                 max_attempts => 2, concurrency_key => 'tk-own-key') as c \gset

set local conductor.fake_now = '2030-01-01 01:00:30+00';
create temp table fired as select * from conductor.tick();

select is(
  (select (queue, priority, concurrency_key, timeout, max_attempts, max_recoveries)::text
     from conductor.tasks where id = (select task_id from fired where schedule_name = 'tk-plain')),
  '(default,0,tk-key,00:00:20,4,1)',
  'A schedule without options fires a task with its kind''s concurrency_key, timeout, max_attempts and '
  || 'max_recoveries, on the schedule''s queue and priority.');
select is(
  (select (queue, priority, concurrency_key, timeout, max_attempts, max_recoveries)::text
     from conductor.tasks where id = (select task_id from fired where schedule_name = 'tk-own')),
  '(tk-own-q,2,tk-own-key,00:00:20,2,1)', 'The schedule''s own options win.');

select * from finish();
rollback;
