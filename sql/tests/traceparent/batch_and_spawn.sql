-- enqueue_many reads a traceparent key per task object (a task without one has NULL) and
-- spawn takes a traceparent for its child; both are stored as given and returned by claim.
begin;
select plan(4);
\ir ../helpers.psql

select 'tp-batch-' || pg_backend_pid() as q \gset
create temp table ids as
select row_number() over () as n, id
  from conductor.enqueue_many(format('[{"kind": "a", "queue": "%s", "traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
                                       {"kind": "b", "queue": "%s"},
                                       {"kind": "c", "queue": "%s", "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"}]',
                                      :'q', :'q', :'q')::jsonb) as id;
select results_eq($$select t.traceparent from ids join conductor.tasks t on t.id = ids.id order by ids.n$$,
  $$values ('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'::text), (null),
           ('00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00')$$,
  'enqueue_many stores each task''s traceparent, NULL where the object has none.');
select is((select count(*) from conductor.claim('tp-w', array[:'q'], 3) c
            join conductor.tasks t on t.id = c.task_id
           where c.traceparent is not distinct from t.traceparent), 3::bigint,
  'claim returns them.');

select conductor.enqueue('root', '{}', :'q' || '-root') as root \gset
select conductor_tests.claim_one(:'q' || '-root') as a \gset
select conductor.spawn(:a, 'kid', 'kid', queue => :'q' || '-kids',
  traceparent => '00-4bf92f3577b34da6a3ce929d0e0e4736-1111111111111111-01') as kid \gset
select conductor.spawn(:a, 'kid2', 'kid', queue => :'q' || '-kids') as kid2 \gset
select is((select traceparent from conductor.tasks where id = :kid),
  '00-4bf92f3577b34da6a3ce929d0e0e4736-1111111111111111-01', 'spawn stores the child''s traceparent.');
select is((select traceparent from conductor.tasks where id = :kid2), null,
  'A child spawned without one has NULL (nothing is taken from the parent).');

select * from finish();
rollback;
