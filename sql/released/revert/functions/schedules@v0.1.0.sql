-- Revert conductor:functions/schedules from pg

begin;

drop function conductor.tick(interval);
drop function conductor.list_schedules();
drop function conductor.delete_schedule(text);
drop function conductor.enable_schedule(text, boolean);
drop function conductor.update_schedule(text, text, text, jsonb, text, text, integer, integer, text, boolean);
drop function conductor.create_schedule(text, text, text, jsonb, text, text, integer, integer, text, text, text, integer, boolean, boolean);
drop function conductor._check_schedule(text, text, text, text, jsonb, text, text, integer);

commit;
