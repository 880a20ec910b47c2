-- A batch takes enqueue_many's fast path unless a task has a parent, a dedupe key, dedupe
-- options or a deadline to start (its own expires_in or its kind's); then the whole batch
-- goes through conductor._enqueue, as spawn and the schedules do. Either way a task is
-- stored alike: the same batch written once alone (the fast path) and once beside a task
-- with a dedupe key (the general path) gives rows equal in every column but the id, the
-- run's root and the dedupe key's task. A kind's deadline to start sends a batch without any
-- of those keys to the general path as well.
begin;
select plan(5);
set local conductor.fake_now = '2030-01-01 00:00:00+00';

select conductor.configure_kind('pa.conf', queue => 'pa-q', priority => 5, concurrency_key => 'pa-key',
                                concurrency_limit => 2, timeout => '30 seconds', max_attempts => 3,
                                max_recoveries => 1);

create temp table batch as
select jsonb_build_array(
  jsonb_build_object('kind', 'pa.conf', 'payload', jsonb_build_object('n', 1)),
  jsonb_build_object('kind', 'pa.plain'),
  jsonb_build_object('kind', 'pa.conf', 'queue', 'pa-own', 'priority', -2, 'timeout', 1.5, 'max_attempts', 4,
                     'max_recoveries', 0, 'concurrency_key', 'own', 'concurrency_limit', 7),
  jsonb_build_object('kind', 'pa.plain', 'run_at', '2030-01-02 03:04:05.678901+00', 'backoff_base', '2 seconds',
                     'backoff_factor', 1.5, 'backoff_max', '1 minute', 'rate_key', 'tenant-1',
                     'traceparent', '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
                     'payload', jsonb_build_object('deep', jsonb_build_array(1, null, 'x'))),
  jsonb_build_object('kind', 'pa.conf', 'queue', null, 'priority', null)
) as tasks;

create temp table fast as
  select b.n, b.id from conductor.enqueue_many((select tasks from batch)) with ordinality as b(id, n);
create temp table general as
  select b.n, b.id
    from conductor.enqueue_many((select tasks || '[{"kind": "pa.plain", "dedupe_key": "pa-general"}]'::jsonb
                                   from batch)) with ordinality as b(id, n);

-- a stored task without what differs between two writes of it
create function pg_temp.stored(task_id bigint) returns jsonb
  language sql
as $$ select to_jsonb(t) - 'id' - 'root_id' from conductor.tasks t where t.id = task_id $$;

select is((select count(*) from fast), 5::bigint, 'The fast path answers an id for each task.');
select ok((select bool_and(f.id < g.id) from fast f join general g using (n)),
  'The general path wrote its own tasks.');
select is((select count(*) from fast f join general g using (n)
            where pg_temp.stored(f.id) = pg_temp.stored(g.id)), 5::bigint,
  'Each task is stored alike by either path, column by column.');
select is((select count(*) from conductor.tasks t join fast f on f.id = t.id where t.root_id = t.id), 5::bigint,
  'A task of the fast path is the root of its own run.');

select conductor.configure_kind('pa.expiring', expires_in => '5 minutes');
create temp table expiring as
  select e.id, e.n from conductor.enqueue_many('[{"kind": "pa.plain"}, {"kind": "pa.expiring"}]') with ordinality as e(id, n);
select results_eq(
  $$select t.expires_in, t.expires_at, (select count(*) from conductor.task_deadlines d where d.task_id = t.id)
      from expiring e join conductor.tasks t on t.id = e.id
     order by e.n$$,
  $$values (null::interval, null::timestamptz, 0::bigint),
           ('5 minutes'::interval, '2030-01-01 00:05:00+00'::timestamptz, 1::bigint)$$,
  'A task whose kind has a deadline to start gets it, though no key of its batch asks for one.');

select * from finish();
rollback;
