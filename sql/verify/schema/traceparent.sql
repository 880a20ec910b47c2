-- Verify conductor:schema/traceparent on pg

begin;

select traceparent::text from conductor.tasks where false;
select (null::conductor._task_spec).traceparent::text, (null::conductor.claimed_task).traceparent::text;

rollback;
