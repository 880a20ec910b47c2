-- Revert conductor:functions/bulk from pg

begin;
set local role conductor_owner;

drop function conductor.cancel_matching(text, text, text, timestamptz, timestamptz, timestamptz, timestamptz, text, bigint, integer);
drop function conductor.retry_matching(text, text, text, timestamptz, timestamptz, timestamptz, timestamptz, text, bigint, boolean, integer);
drop function conductor._check_bulk_call(text, conductor.task_status[], text, text, timestamptz, timestamptz, timestamptz, timestamptz, text, bigint, integer);
drop function conductor.preview_matching(text, text, text, text, timestamptz, timestamptz, timestamptz, timestamptz, text, integer);
drop function conductor._matches_filter(conductor.tasks, text, text, timestamptz, timestamptz, timestamptz, timestamptz, text);
drop function conductor._bulk_statuses(text, text, text, text, timestamptz, timestamptz, timestamptz, timestamptz, text);

commit;
