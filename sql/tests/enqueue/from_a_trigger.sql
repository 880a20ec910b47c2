-- The README's trigger example, as an application role granted conductor_client: an
-- after-insert trigger on the application's table enqueues a task per row in the row's own
-- transaction, so a rolled-back insert (a savepoint here) leaves no task, and the dedupe_key
-- makes an order's receipt one task however often the trigger fires for it.
begin;
select plan(5);
\ir ../helpers.psql

create role t_app;
grant conductor_client to t_app;
create schema shop authorization t_app;
set local role t_app;

create table shop.orders (id bigint primary key, total numeric not null);
create function shop.order_placed() returns trigger language plpgsql as $$
begin
  perform conductor.enqueue('send_receipt', jsonb_build_object('order_id', new.id),
                            dedupe_key => 'receipt:' || new.id);
  return new;
end $$;
create trigger order_placed after insert on shop.orders
  for each row execute function shop.order_placed();

insert into shop.orders values (1, 10), (2, 20);
select results_eq(
  $$select (payload ->> 'order_id')::bigint, status::text from conductor.tasks
     where kind = 'send_receipt' and dedupe_key in ('receipt:1', 'receipt:2') order by 1$$,
  $$values (1::bigint, 'queued'), (2, 'queued')$$,
  'Two orders, two queued send_receipt tasks naming them, enqueued by the trigger as conductor_client.');

savepoint before_three;
insert into shop.orders values (3, 30);
select is((select count(*) from conductor.tasks where dedupe_key = 'receipt:3'), 1::bigint,
  'Inside the savepoint the third order has its task.');
rollback to savepoint before_three;
select is((select count(*) from conductor.tasks where dedupe_key = 'receipt:3'), 0::bigint,
  'Rolled back with the order: no task for an order that does not exist.');

delete from shop.orders where id = 2;
insert into shop.orders values (2, 25);
select is((select count(*) from conductor.tasks where dedupe_key = 'receipt:2'), 1::bigint,
  'The same order placed again while its receipt is queued: still one task (dedupe_key).');
select is((select queue from conductor.tasks where dedupe_key = 'receipt:1'), 'default',
  'Without a kind configuration the task lands on the default queue.');

reset role;
select * from finish();
rollback;
