-- A kind's retry policy applies to tasks that do not set their own.
begin;
select plan(8);

set local conductor.fake_now = '2030-01-01 00:00:00+00';

select lives_ok(
  $$select conductor.configure_kind('resize', max_attempts => 4, max_recoveries => 1,
                                    backoff_base => interval '10 seconds', backoff_factor => 3,
                                    backoff_max => interval '1 minute')$$,
  'A kind can be given a retry policy.');

create temporary table t(name text primary key, id bigint) on commit drop;
insert into t values ('plain', conductor.enqueue('resize', queue => 'kinds-test')),
                     ('own', conductor.enqueue('resize', max_attempts => 2, queue => 'kinds-test')),
                     ('other', conductor.enqueue('other', queue => 'kinds-test'));

select is((select max_attempts from conductor.tasks join t using (id) where name = 'plain'),
          4, 'A task of the kind takes the kind''s max_attempts.');
select is((select max_recoveries from conductor.tasks join t using (id) where name = 'plain'),
          1, 'A task of the kind takes the kind''s max_recoveries.');
select is((select max_attempts from conductor.tasks join t using (id) where name = 'own'),
          2, 'A task''s own max_attempts wins over its kind''s.');
select is((select max_attempts from conductor.tasks join t using (id) where name = 'other'),
          1, 'A kind without a policy keeps the engine default of one attempt.');

-- backoff: second failure of a 'resize' task waits 10 s * 3 less up to 20 %
create temporary table held on commit drop as
  select c.* from conductor.claim('w', array['kinds-test'], 1) c;
select conductor.fail(attempt_id, 'first') from held;
select ok((select task.run_at from conductor.tasks task join held h on h.task_id = task.id)
            between '2030-01-01 00:00:08+00' and '2030-01-01 00:00:10+00',
          'The first retry waits the kind''s backoff_base, less at most 20 % jitter.');

select lives_ok($$select conductor.configure_kind('resize')$$,
                'Configuring a kind again replaces its policy.');
insert into t values ('cleared', conductor.enqueue('resize', queue => 'kinds-test'));
select is((select max_attempts from conductor.tasks join t using (id) where name = 'cleared'),
          1, 'A cleared policy falls back to the engine default.');

select * from finish();
rollback;
