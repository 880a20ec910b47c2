-- Revert conductor:functions/complete_in_transaction from pg

begin;
set local role conductor_owner;

drop function conductor.complete_in_transaction(bigint, jsonb);

commit;
