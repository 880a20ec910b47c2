-- Revert conductor:schema/queue_limits from pg

begin;

drop table conductor.queue_limits;

commit;
