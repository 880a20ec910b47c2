-- Deploy conductor:schema/hot_fillfactor to pg
--
-- Room on each page for the row versions the hot path writes (issue 26):
--
--   conductor.tasks      fillfactor 80 -> 50
--   conductor.attempts   fillfactor 85 -> 50
--
-- A task row is written three times (enqueue, claim, completion) and its attempt
-- twice (claim, completion). A claim and a completion change status, which the
-- partial indexes name, so they are never HOT; but a new version that fits on
-- its page still saves a Heap/LOCK record and writes a smaller Heap/UPDATE than
-- one that moves to another page. An attempt's completion is HOT when its page
-- has room, and each one that is not adds a new version to two indexes.
-- Measured through the engine's own functions (bench/wal_per_task.py: claims of
-- 50 and complete_many, pg_walinspect, full-page images apart), per task:
-- claim + complete 1,214 B in 13.2 records before, 1,045 B in 11.5 after
-- (Heap/LOCK 2.29 -> 1.24 records; the attempts' completions 0.63 -> 0.95 HOT);
-- enqueue 422 B either way. Lower settings gained little in a first look
-- (tasks at 40: -15 B, at 30: -24 B).
--
-- The price is space: a page holds about 0.6 of the rows it held, finished
-- history included (retention deletes it; every reader of the history reads
-- through an index). Only pages filled from now on are filled to 50 %: no rewrite,
-- and ALTER TABLE ... SET (fillfactor) takes a SHARE UPDATE EXCLUSIVE lock,
-- which no enqueue, claim or report conflicts with.

begin;
set local role conductor_owner;

alter table conductor.tasks set (fillfactor = 50);
alter table conductor.attempts set (fillfactor = 50);

commit;
