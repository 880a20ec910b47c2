-- enqueue raises QC103 when the stored payload exceeds conductor.settings.max_payload_bytes.
begin;
select plan(5);

update conductor.settings set max_payload_bytes = 100;
create temp table before_count as select count(*) as n from conductor.tasks;

select throws_ok(
  format('select conductor.enqueue(%L, %L)', 'big', jsonb_build_object('blob', repeat('x', 200))),
  'QC103', NULL,
  'A payload over the limit is refused with QC103.');
select throws_like(
  format('select conductor.enqueue(%L, %L)', 'big', jsonb_build_object('blob', repeat('x', 200))),
  'payload too large for kind ''big'': % bytes, the limit is 100 bytes',
  'The message names the kind, the size and the limit.');
select lives_ok(
  format('select conductor.enqueue(%L, %L)', 'small', jsonb_build_object('blob', repeat('x', 10))),
  'A payload under the limit is accepted.');

select is((select count(*) from conductor.tasks) - (select n from before_count), 1::bigint,
  'The oversized payload wrote nothing.');

update conductor.settings set max_payload_bytes = default;
select lives_ok(
  format('select conductor.enqueue(%L, %L)', 'big', jsonb_build_object('blob', repeat('x', 200))),
  'Without the setting the limit is 1 MiB, so the same payload is accepted.');

select * from finish();
rollback;
