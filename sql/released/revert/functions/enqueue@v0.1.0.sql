-- Revert conductor:functions/enqueue from pg

begin;

drop function conductor.enqueue_many(jsonb);
drop function conductor.enqueue(text, jsonb, text, integer, timestamptz, integer, text, text, bigint, integer, interval, double precision, interval);
drop function conductor._enqueue(conductor._task_spec[]);
drop function conductor._raise_spec_problem(text, bigint, conductor._task_spec);
drop function conductor._spec_problem(conductor._task_spec);

commit;
