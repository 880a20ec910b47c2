-- enqueue_many's fast path (a batch of roots without a dedupe key, dedupe options or a
-- deadline to start) judges the first task of each distinct task (the same keys and values
-- but for the payload, and a payload the rules see alike: any object under the limit) as it
-- is about to write it. The first bad task in input order is named, however many alike valid
-- tasks come before it, a bad payload among alike tasks is its own distinct task, and nothing
-- of a refused batch is written.
begin;
select plan(9);

update conductor.settings set max_payload_bytes = 64;
create temp table before_count as select count(*) as n from conductor.tasks;

-- the SQLSTATE and detail a statement raises
create function pg_temp.error_of(statement text) returns text
  language plpgsql
as $$
declare
  v_state text;
  v_detail text;
begin
  execute statement;
  return 'no error';
exception when others then
  get stacked diagnostics v_state = returned_sqlstate, v_detail = pg_exception_detail;
  return v_state || ' ' || coalesce(v_detail, '');
end
$$;

select is(pg_temp.error_of($$select conductor.enqueue_many((
    select jsonb_agg(case when i = 50 then jsonb_build_object('kind', 'fp k ')
                          else jsonb_build_object('kind', 'fp', 'payload', jsonb_build_object('n', i)) end
                     order by i)
      from generate_series(1, 50) i))$$),
  'QC101 task #50 of the batch',
  'A bad kind after 49 alike valid tasks is named by its place.');

select is(pg_temp.error_of($$select conductor.enqueue_many((
    select jsonb_agg(jsonb_build_object('kind', 'fp', 'payload',
                                        case when i = 7 then jsonb_build_object('s', repeat('x', 100))
                                             else jsonb_build_object('n', i) end)
                     order by i)
      from generate_series(1, 20) i))$$),
  'QC103 task #7 of the batch',
  'An oversized payload among alike tasks is judged on its own.');

select is(pg_temp.error_of($$select conductor.enqueue_many('[{"kind": "fp", "payload": {"n": 1}},
                                                             {"kind": "fp", "payload": {"n": 2}},
                                                             {"kind": "fp", "payload": "text"},
                                                             {"kind": "fp", "payload": [1]}]')$$),
  'QC102 task #3 of the batch',
  'A payload that is not an object among alike tasks is named; the first such one.');

select is(pg_temp.error_of($$select conductor.enqueue_many('[{"kind": "fp", "payload": {"n": 1}},
                                                             {"kind": "fp", "payload": null}]')$$),
  'QC102 task #2 of the batch',
  'A JSON null payload is refused, not taken for a missing one.');

select is(pg_temp.error_of($$select conductor.enqueue_many('[{"kind": "fp", "queue": "ok"},
                                                             {"kind": "fp", "queue": "ok", "priority": 3},
                                                             {"kind": "fp", "queue": "ok", "max_attempts": 0},
                                                             {"kind": "fp", "queue": "bad queue"}]')$$),
  'QC106 task #3 of the batch',
  'Tasks differing in one key are distinct: the first that breaks a rule is named.');

select is(pg_temp.error_of($$select conductor.enqueue_many('[{"kind": "fp"}, {"kind": "fp", "concurrency_limit": 2}]')$$),
  'QC106 task #2 of the batch',
  'A concurrency_limit without a key (the task''s or its kind''s) is refused on the fast path too.');

select is(pg_temp.error_of($$select conductor.enqueue_many('[{"kind": "fp", "priority": "high"},
                                                             {"kind": "fp", "queue": "bad queue"}]')$$),
  'QC106 invalid input syntax for type integer: "high"',
  'A value that does not convert is found before any rule is judged.');

select is((select count(*) from conductor.tasks) - (select n from before_count), 0::bigint,
  'No task of a refused batch was written, not even those before the bad one.');

select is((select count(*) from conductor.enqueue_many(
            (select jsonb_agg(jsonb_build_object('kind', 'fp', 'payload', jsonb_build_object('n', i)))
               from generate_series(1, 50) i)))::integer, 50,
  'Fifty alike valid tasks are written.');

select * from finish();
rollback;
