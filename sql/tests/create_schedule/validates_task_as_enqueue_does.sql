-- A schedule's task is checked by the rules enqueue applies (conductor._spec_problem), with
-- the SQLSTATE enqueue gives, when the schedule is created or updated: a schedule tick()
-- could never fire is refused up front.
begin;
select plan(14);
set local conductor.fake_now = '2030-01-01 00:00:00+00';

create function pg_temp.sqlstate_of(sql text) returns text language plpgsql as $$
begin
  execute sql;
  return null;
exception when others then
  return sqlstate;
end
$$;

select is(pg_temp.sqlstate_of($$select conductor.create_schedule('poison', '* * * * * *', ' badkind')$$), 'QC101',
  'A kind with a leading space is refused with QC101.');
select is(pg_temp.sqlstate_of($$select conductor.enqueue(' badkind')$$), 'QC101',
  '... as enqueue refuses it.');
select is(pg_temp.sqlstate_of(format('select conductor.create_schedule(%L, %L, %L)', 'poison', '* * * * *', repeat('k', 300))),
  'QC101', 'A kind of 300 characters is refused with QC101, as enqueue does.');
select is(pg_temp.sqlstate_of(format('select conductor.create_schedule(%L, %L, %L, dedupe_key => %L)',
                                     'poison', '* * * * *', 'k', repeat('d', 2000))),
  pg_temp.sqlstate_of(format('select conductor.enqueue(%L, dedupe_key => %L)', 'k', repeat('d', 2000))),
  'A dedupe key of 2,000 bytes is refused with the SQLSTATE enqueue gives.');
select is(pg_temp.sqlstate_of(format('select conductor.create_schedule(%L, %L, %L, dedupe_key => %L)',
                                     'poison', '* * * * *', 'k', repeat('d', 2000))), 'QC106',
  '... which is QC106.');
select throws_ok(format('select conductor.create_schedule(%L, %L, %L, concurrency_key => %L)',
                        'poison', '* * * * *', 'k', repeat('c', 1001)), 'QC106', NULL,
  'A concurrency key over 1000 bytes is refused with QC106.');
select throws_ok(format('select conductor.create_schedule(%L, %L, %L, queue => %L)',
                        'poison', '* * * * *', 'k', repeat('q', 101)), 'QC104', NULL,
  'A queue name of 101 characters is refused with QC104, as enqueue does.');
select throws_ok($$select conductor.create_schedule('poison', '* * * * *', 'k', queue => 'a b')$$, 'QC104', NULL,
  'A queue name with a space is refused with QC104.');
update conductor.settings set max_payload_bytes = 100;
select throws_ok(format('select conductor.create_schedule(%L, %L, %L, %L)', 'poison', '* * * * *', 'k',
                        jsonb_build_object('blob', repeat('x', 200))), 'QC103', NULL,
  'A payload over the limit is refused with QC103, as enqueue does.');
update conductor.settings set max_payload_bytes = default;
select is((select count(*) from conductor.schedules), 0::bigint, 'No refused schedule was stored.');

select conductor.create_schedule('good', '* * * * *', 'k') as c \gset
select throws_ok($$select conductor.update_schedule('good', kind => 'k ')$$, 'QC101', NULL,
  'update_schedule refuses a padded kind with QC101.');
select throws_ok($$select conductor.update_schedule('good', queue => '-q')$$, 'QC104', NULL,
  'update_schedule refuses a bad queue with QC104.');
select throws_ok($$select conductor.update_schedule('good', max_attempts => 0)$$, 'QC106', NULL,
  'update_schedule refuses max_attempts 0 with QC106.');
select is((select (kind, queue, max_attempts)::text from conductor.schedules where name = 'good'), '(k,default,)',
  'The refused updates left the schedule as it was.');

select * from finish();
rollback;
