-- Revert conductor:schema/expired_status from pg
--
-- PostgreSQL cannot drop a value of an enum (nor can its owner edit pg_enum):
-- the label stays, unused. A task that ended expired becomes 'failed' (its
-- error says it expired), the terminal status the earlier engine knows, so
-- every function of that state reads it, retries it and prunes it.

begin;

update conductor.tasks set status = 'failed' where status = 'expired';

commit;
