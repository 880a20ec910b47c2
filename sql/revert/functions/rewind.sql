-- Revert conductor:functions/rewind from pg

begin;

drop function conductor.fork(bigint, text);
drop function conductor.rewind(bigint, text);
drop function conductor._steps_from(bigint, text);
drop function conductor._check_rewindable(bigint, conductor.task_status, text);

commit;
