-- A child that expires before it starts is a child that did not succeed: its waiting parent
-- is woken as for a failed or cancelled child, the child's status 'expired' in the outcome.
begin;
select plan(3);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.enqueue('root', '{}', 'exp-parent') as parent \gset
select conductor_tests.claim_one('exp-parent') as a_parent \gset
select conductor.spawn(:a_parent, 'c', 'kid', '{}', 'exp-kids', expires_in => '1 minute') as child \gset
select conductor.suspend(:a_parent, 'join', 'children_all') as s \gset
select is((select status::text from conductor.tasks where id = :parent), 'waiting', 'The parent waits for its child.');

set local conductor.fake_now = '2030-01-01 00:01:00+00';
select is((select tasks_expired from conductor.reap_report()), 1, 'Nobody started the child in time: it expires.');
select results_eq(format($$select c.status::text, p.status::text, s.result->0->>'status'
                             from conductor.tasks c, conductor.tasks p
                             left join conductor.steps s on s.task_id = p.id and s.name = 'join'
                            where c.id = %s and p.id = %s$$, :child, :parent),
  $$values ('expired'::text, 'queued'::text, 'expired'::text)$$,
  'The parent is woken, its outcome naming the child expired.');

select * from finish();
rollback;
