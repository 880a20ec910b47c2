-- Revert conductor:functions/internal from pg

begin;

drop function conductor._held_task(bigint);
drop function conductor._refuse(bigint);
drop function conductor._backoff(bigint, integer, interval, double precision, interval);
drop function conductor._max_payload_bytes();
drop type conductor._task_spec;
drop function conductor.now();

commit;
