-- Revert conductor:functions/runs from pg

begin;

drop trigger tasks_child_finished on conductor.tasks;
drop function conductor._child_finished();
drop function conductor.children(bigint);
drop function conductor.emit_event(text, jsonb);
drop function conductor.suspend(bigint, text, text, text, interval, interval);
drop function conductor.spawn(bigint, text, text, jsonb, text, integer, timestamptz, integer, text, text, integer);
drop function conductor.save_step(bigint, text, jsonb);
drop function conductor._wake(bigint, jsonb);
drop function conductor._children_summary(bigint);
drop function conductor._check_step_name(text);

commit;
