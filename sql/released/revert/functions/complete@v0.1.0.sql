-- Revert conductor:functions/complete from pg

begin;

drop function conductor.complete_many(bigint[], jsonb[]);
drop function conductor.complete(bigint, jsonb);
drop function conductor._complete(bigint[], jsonb[]);

commit;
