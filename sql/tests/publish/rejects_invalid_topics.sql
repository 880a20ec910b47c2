-- A topic is 1 to 200 characters and not '*' (which only subscribe takes, for every topic):
-- publish raises QC106 for a NULL, empty, '*' or longer topic, naming it.
begin;
select plan(6);
\ir ../helpers.psql

select throws_ok($$select conductor.publish(null)$$, 'QC106', 'invalid topic NULL',
  'A NULL topic is refused with QC106.');
select throws_ok($$select conductor.publish('')$$, 'QC106', $$invalid topic ''$$,
  'An empty topic is refused with QC106.');
select throws_ok($$select conductor.publish('*')$$, 'QC106', $$invalid topic '*'$$,
  'The topic ''*'' is refused: it means every topic to a subscriber.');
select throws_ok(format('select conductor.publish(%L)', repeat('t', 201)), 'QC106', null,
  'A topic of 201 characters is refused with QC106.');
select is(conductor.publish(repeat('t', 200)), false, 'A topic of 200 characters is accepted.');
select is(conductor.publish('orders.created', null), false, 'A NULL payload is accepted (sent as {}).');

select * from finish();
rollback;
