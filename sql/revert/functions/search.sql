-- Revert conductor:functions/search from pg

begin;
set local role conductor_owner;

drop function conductor.search_tasks(text, text, text, text, jsonb, timestamptz, timestamptz,
                                     timestamptz, timestamptz, bigint, integer, integer);
drop function conductor._enqueued_id_bound(timestamptz);

commit;
