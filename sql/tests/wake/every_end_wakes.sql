-- Every way a child ends wakes its waiting parent: complete (succeeded), fail out of attempts
-- (failed), cancel (cancelled) and a lost worker past its recoveries (dead). A fail that is
-- retried does not end the child and wakes nothing.
begin;
select plan(5);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

create temp table parents (how text, parent bigint, child bigint);
do $$
declare
  v_how text;
  v_parent bigint;
  v_attempt bigint;
  v_child bigint;
begin
  foreach v_how in array array['complete', 'fail', 'cancel', 'dead', 'retried'] loop
    v_parent := conductor.enqueue('root', '{}', 'wake-end-' || v_how);
    v_attempt := conductor_tests.claim_one('wake-end-' || v_how);
    v_child := conductor.spawn(v_attempt, 'c', 'kid', '{}', 'wake-end-kid-' || v_how,
                               max_recoveries => 0, max_attempts => case when v_how = 'retried' then 2 end);
    perform conductor.suspend(v_attempt, 'join', 'children_all');
    insert into parents values (v_how, v_parent, v_child);
  end loop;
end
$$;

select conductor.complete(conductor_tests.claim_one('wake-end-kid-complete'), '1') as x1 \gset
select conductor.fail(conductor_tests.claim_one('wake-end-kid-fail'), 'no') as x2 \gset
select conductor.cancel((select child from parents where how = 'cancel')) as x3 \gset
select conductor_tests.claim_one('wake-end-kid-dead', 'w1', '1 second') as x4 \gset
select conductor.fail(conductor_tests.claim_one('wake-end-kid-retried'), 'again') as x5 \gset
set local conductor.fake_now = '2030-01-01 00:00:10+00';
select conductor.reap() as r \gset

select results_eq($$select p.how, c.status::text, t.status::text, s.result->0->>'status'
                      from parents p join conductor.tasks c on c.id = p.child join conductor.tasks t on t.id = p.parent
                      left join conductor.steps s on s.task_id = p.parent and s.name = 'join'
                     where p.how = 'complete'$$,
  $$values ('complete'::text, 'succeeded'::text, 'queued'::text, 'succeeded'::text)$$,
  'A child that completes wakes its parent.');
select results_eq($$select c.status::text, t.status::text, s.result->0->>'status'
                      from parents p join conductor.tasks c on c.id = p.child join conductor.tasks t on t.id = p.parent
                      left join conductor.steps s on s.task_id = p.parent and s.name = 'join' where p.how = 'fail'$$,
  $$values ('failed'::text, 'queued'::text, 'failed'::text)$$,
  'A child that fails for good wakes its parent.');
select results_eq($$select c.status::text, t.status::text, s.result->0->>'status'
                      from parents p join conductor.tasks c on c.id = p.child join conductor.tasks t on t.id = p.parent
                      left join conductor.steps s on s.task_id = p.parent and s.name = 'join' where p.how = 'cancel'$$,
  $$values ('cancelled'::text, 'queued'::text, 'cancelled'::text)$$,
  'A cancelled child wakes its parent.');
select results_eq($$select c.status::text, t.status::text, s.result->0->>'status'
                      from parents p join conductor.tasks c on c.id = p.child join conductor.tasks t on t.id = p.parent
                      left join conductor.steps s on s.task_id = p.parent and s.name = 'join' where p.how = 'dead'$$,
  $$values ('dead'::text, 'queued'::text, 'dead'::text)$$,
  'A child whose worker was lost past its recoveries (dead, by reap) wakes its parent.');
select results_eq($$select c.status::text, t.status::text, s.result
                      from parents p join conductor.tasks c on c.id = p.child join conductor.tasks t on t.id = p.parent
                      left join conductor.steps s on s.task_id = p.parent and s.name = 'join' where p.how = 'retried'$$,
  $$values ('queued'::text, 'waiting'::text, null::jsonb)$$,
  'A child failing with an attempt left is queued again and its parent keeps waiting.');

select * from finish();
rollback;
