-- Revert conductor:schema/owner from pg
--
-- Gives the schema and its objects back to the role that reverts (v0.1.0 left
-- them with the role that deployed). conductor_owner owns nothing else in this
-- database, so REASSIGN OWNED moves exactly those. The role itself stays.

begin;

reassign owned by conductor_owner to current_user;

commit;
