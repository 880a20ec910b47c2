-- expires_in: the caller's, else the kind's (configure_kind), else none; stored with the
-- deadline to start, expires_at = run_at (or now) + expires_in; the same key in an
-- enqueue_many object; spawn's argument; a schedule's task takes its kind's.
begin;
select plan(9);
\ir ../helpers.psql
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.enqueue('exp-a', '{}', 'exp-q', expires_in => '10 minutes') as t_now \gset
select conductor.enqueue('exp-a', '{}', 'exp-q', run_at => '2030-01-02 00:00:00+00', expires_in => '1 hour') as t_later \gset
select conductor.enqueue('exp-a', '{}', 'exp-q') as t_none \gset

select results_eq(format('select expires_in, expires_at from conductor.tasks where id = %s', :t_now),
  $$values ('10 minutes'::interval, '2030-01-01 00:10:00+00'::timestamptz)$$,
  'A task due now stores expires_in and its deadline to start, now + expires_in.');
select results_eq(format('select expires_at from conductor.tasks where id = %s', :t_later),
  $$values ('2030-01-02 01:00:00+00'::timestamptz)$$,
  'A task due later has its deadline from its due time: run_at + expires_in.');
select results_eq(format('select expires_in, expires_at from conductor.tasks where id = %s', :t_none),
  $$values (null::interval, null::timestamptz)$$,
  'Without expires_in (and none for its kind), a task has no deadline: it waits for ever.');

select conductor.configure_kind('exp-kind', expires_in => '5 minutes') as ck \gset
select conductor.enqueue('exp-kind', '{}', 'exp-q') as t_kind \gset
select conductor.enqueue('exp-kind', '{}', 'exp-q', expires_in => '2 minutes') as t_own \gset
select results_eq(format('select id, expires_in, expires_at from conductor.tasks where id in (%s, %s) order by id', :t_kind, :t_own),
  format($$values (%s::bigint, '5 minutes'::interval, '2030-01-01 00:05:00+00'::timestamptz),
                  (%s::bigint, '2 minutes'::interval, '2030-01-01 00:02:00+00'::timestamptz)$$, :t_kind, :t_own),
  'A kind''s expires_in applies when the caller gives none; the caller''s wins.');
select is((select expires_in from conductor.kinds where kind = 'exp-kind'), '5 minutes'::interval,
  'configure_kind stores the kind''s expires_in.');

create temp table batch as
  select e.id, e.n from conductor.enqueue_many('[{"kind": "exp-a", "queue": "exp-q", "expires_in": "30 seconds"},
                                                 {"kind": "exp-kind", "queue": "exp-q"},
                                                 {"kind": "exp-a", "queue": "exp-q"}]') with ordinality as e(id, n);
select results_eq($$select t.expires_in, t.expires_at from batch e join conductor.tasks t on t.id = e.id order by e.n$$,
  $$values ('30 seconds'::interval, '2030-01-01 00:00:30+00'::timestamptz),
           ('5 minutes'::interval, '2030-01-01 00:05:00+00'::timestamptz),
           (null::interval, null::timestamptz)$$,
  'enqueue_many reads expires_in from each object, else the kind''s, else none.');

select conductor.enqueue('exp-parent', '{}', 'exp-parent-q') as parent \gset
select conductor_tests.claim_one('exp-parent-q') as a_parent \gset
select conductor.spawn(:a_parent, 'c1', 'exp-a', '{}', 'exp-q', expires_in => '90 seconds') as child \gset
select conductor.spawn(:a_parent, 'c2', 'exp-kind', '{}', 'exp-q') as child_kind \gset
select results_eq(format('select id, expires_at from conductor.tasks where id in (%s, %s) order by id', :child, :child_kind),
  format($$values (%s::bigint, '2030-01-01 00:01:30+00'::timestamptz), (%s::bigint, '2030-01-01 00:05:00+00'::timestamptz)$$,
         :child, :child_kind),
  'spawn takes expires_in, else the child''s kind''s.');

select conductor.create_schedule('exp-sched', '* * * * *', 'exp-kind', '{}', 'exp-q') as cs \gset
select conductor.fire_schedule('exp-sched') as fired \gset
select results_eq(format('select expires_in, expires_at from conductor.tasks where id = %s', :fired),
  $$values ('5 minutes'::interval, '2030-01-01 00:05:00+00'::timestamptz)$$,
  'A schedule''s task takes its kind''s expires_in, as it takes its kind''s timeout.');

select is((select count(*) from conductor.tasks where expires_at is not null and status = 'queued'
            and id not in (select t.id from conductor.tasks t where t.expires_in is not null)), 0::bigint,
  'Only tasks with an expires_in have a deadline.');

select * from finish();
rollback;
