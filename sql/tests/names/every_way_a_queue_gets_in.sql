-- The queue rule (conductor._spec_problem, unchanged since v0.1.0) holds on every path
-- that names a queue for a task or a control: enqueue, enqueue_many, spawn, configure_kind,
-- create_schedule and set_rate_limit as conductor_worker, update_schedule and pause_queue as
-- conductor_admin; conductor._check_queue_names applies it to a worker's queues list.
begin;
select plan(28);
set local conductor.fake_now = '2030-01-01 00:00:00+00';

create role t_worker;
grant conductor_worker to t_worker;
create role t_admin;
grant conductor_admin to t_admin;

select conductor.enqueue('names.root', '{}', 'names-q') as root \gset
create temp table bad (what text, queue text);
insert into bad values ('a tab', 'names' || chr(9) || 'q'), ('a newline', 'names' || chr(10) || 'q'),
                       ('U+202E', 'names' || chr(8238) || 'q'), ('markup', '<b>names</b>');
grant select on bad to t_worker, t_admin;

set local role t_worker;
select attempt_id as a from conductor.claim(worker_id => 'w-names', queues => array['names-q'], max_tasks => 1, lease => '60 seconds') \gset

select throws_ok(format('select conductor.enqueue(%L, %L, %L)', 'names.k', '{}', queue), 'QC104', null,
                 format('enqueue refuses a queue with %s.', what)) from bad;
select throws_ok(format('select conductor.enqueue_many(%L)', jsonb_build_array(jsonb_build_object('kind', 'names.k', 'queue', queue))),
                 'QC104', null, format('enqueue_many refuses a queue with %s.', what)) from bad where what <> 'a tab';
select throws_ok(format('select conductor.spawn(%s, %L, %L, queue => %L)', :a, 'step-' || md5(queue), 'names.k', queue),
                 'QC104', null, format('spawn refuses a queue with %s.', what)) from bad where what <> 'a tab';
select throws_ok(format('select conductor.configure_kind(%L, queue => %L)', 'names.k', queue), 'QC104', null,
                 format('configure_kind refuses a queue with %s.', what)) from bad where what <> 'a tab';
select throws_ok(format('select conductor.create_schedule(%L, %L, %L, queue => %L)', 'names-' || md5(queue), '* * * * *',
                        'names.k', queue), 'QC104', null, format('create_schedule refuses a queue with %s.', what))
  from bad where what <> 'a tab';
select throws_ok(format('select conductor.set_rate_limit(queue => %L, per_second => 5)', queue), 'QC104', null,
                 format('set_rate_limit refuses a queue with %s.', what)) from bad where what <> 'a tab';

reset role;
set local role t_admin;
select conductor.create_schedule('names-sched', '* * * * *', 'names.ok') is not null as created \gset
select throws_ok(format('select conductor.update_schedule(%L, queue => %L)', 'names-sched', queue), 'QC104', null,
                 format('update_schedule refuses a queue with %s.', what)) from bad where what <> 'a tab';
select throws_ok(format('select conductor.pause_queue(%L)', queue), 'QC104', null,
                 format('pause_queue refuses a queue with %s.', what)) from bad where what <> 'a tab';

reset role;
select throws_ok(format('select conductor._check_queue_names(array[%L, %L])', 'names-q', queue), 'QC104',
                 format('invalid queue %s: a queue name is 1-100 letters, digits and _ . : / -, starting with a letter or digit',
                        conductor._echo(queue)),
                 format('_check_queue_names refuses a list naming a queue with %s, with enqueue''s message.', what))
  from bad where what = 'markup';
select lives_ok($$select conductor._check_queue_names(array['default', 'emails', 'reports.high', 'a:b/c-d_9'])$$,
  'A list of valid queue names passes.');
select lives_ok($$select conductor._check_queue_names(null)$$, 'A NULL list (every queue) passes.');

select * from finish();
rollback;
