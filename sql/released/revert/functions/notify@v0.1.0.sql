-- Revert conductor:functions/notify from pg

begin;

drop trigger tasks_notify_inserted on conductor.tasks;
drop function conductor._notify_inserted();
drop function conductor._notify_done(bigint[]);
drop function conductor._notify_queue(text);

commit;
