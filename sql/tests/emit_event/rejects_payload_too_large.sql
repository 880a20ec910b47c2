-- emit_event refuses a payload over conductor.settings.max_payload_bytes with QC103, as enqueue
-- does, naming its size and the limit, and records nothing; a payload of exactly the limit is
-- recorded.
begin;
select plan(3);
\ir ../helpers.psql

select jsonb_build_object('s', repeat('x', 200)) as big \gset
select pg_column_size(:'big'::jsonb) as big_size \gset
update conductor.settings set max_payload_bytes = :big_size - 1;

select throws_ok(format($$select conductor.emit_event('emit-big', %L)$$, :'big'), 'QC103',
  format('payload too large for event ''emit-big'': %s bytes, the limit is %s bytes', :big_size, :big_size - 1),
  'An oversized payload is refused with QC103, the message naming the event, the size and the limit.');
select is_empty($$select * from conductor.events where name = 'emit-big'$$, 'Nothing was recorded.');

select jsonb_build_object('s', repeat('x', 199)) as edge \gset
select conductor.emit_event('emit-big', :'edge') as n \gset
select is((select payload from conductor.events where name = 'emit-big'), :'edge'::jsonb,
  'A payload of exactly the limit is recorded.');

select * from finish();
rollback;
