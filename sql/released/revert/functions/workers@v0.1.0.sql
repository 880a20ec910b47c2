-- Revert conductor:functions/workers from pg

begin;

drop function conductor.deregister_worker(text);
drop function conductor.register_worker(text, text, integer, text[], integer, text[], text, jsonb);

commit;
