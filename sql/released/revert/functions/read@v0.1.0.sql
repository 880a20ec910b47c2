-- Revert conductor:functions/read from pg

begin;

drop function conductor.list_tasks(text, text, text, bigint, integer);
drop function conductor.get_task(bigint);

commit;
