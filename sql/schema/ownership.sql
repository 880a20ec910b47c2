-- Deploy conductor:schema/ownership to pg
-- requires: schema/owner
-- requires: schema/fleet
-- requires: schema/operations
-- requires: schema/settings
--
-- Who declared each row that configures or identifies something, and the
-- floors a login without conductor_admin cannot go under (issue 25). Adds:
--
--   conductor.kinds.owner        the login (conductor._caller()) whose
--   conductor.rate_limits.owner  configure_kind, set_rate_limit or
--   conductor.workers.owner      register_worker last changed the row (an
--                                admin's change makes it the admin's); another
--                                login may not change it (QC208, through
--                                conductor._check_owner), an admin may. NULL:
--                                a row from before v0.3.0, whose login is
--                                unknown; the first login that declares it
--                                again claims it (the code that declared it
--                                does so at its next start)
--   conductor.settings.min_retention
--                                1 day: the shortest retention a login without
--                                conductor_admin may give a kind
--                                (configure_kind refuses less, QC106), and the
--                                least apply_retention keeps a run of a kind
--                                whose retention no admin set, whatever the
--                                kind's row says (a row from v0.2.0 may say 0)
--   conductor.settings.min_rate_limit
--                                1 start a second: the slowest rate a login
--                                without conductor_admin may set
--                                (set_rate_limit refuses less, QC106); a
--                                queue is stopped by pause_queue (admin), not
--                                by a rate limit of 1e-300 a second
--
-- Every column is new and NULL or has a constant default: no table rewrite,
-- and every row from v0.2.0 keeps its values with owner NULL.
--
-- Written by functions/kinds, functions/controls and functions/workers (and
-- the bare worker rows of heartbeat and sleep); the settings by conductor_admin.

begin;
set local role conductor_owner;

alter table conductor.kinds add column owner text;
comment on column conductor.kinds.owner is
  'The login (conductor._caller()) that last changed the kind''s policy with configure_kind; only it or '
  'an admin may change it (QC208). NULL: declared before v0.3.0; the next login to declare it claims it.';

alter table conductor.rate_limits add column owner text;
comment on column conductor.rate_limits.owner is
  'The login (conductor._caller()) that last set the limit with set_rate_limit; only it or an admin may '
  'change or remove it (QC208). NULL: set before v0.3.0; the next login to set it claims it.';

alter table conductor.workers add column owner text;
comment on column conductor.workers.owner is
  'The login (conductor._caller()) that registered the worker (or whose heartbeat or sleep recorded it); '
  'only it or an admin may register it again or deregister it (QC208), and save_log writes only into '
  'the attempts of a worker of the caller''s. NULL: recorded before v0.3.0; the next login to register it claims it.';

-- 1 day: long enough that yesterday's runs (a failure in the night, the batch
-- that ran at 3 am) are still there when someone looks, however another login
-- configured the kind; short enough that a busy application that wants little
-- history keeps at most a day of it without asking an admin. An admin sets
-- any retention, this floor included (0: none).
alter table conductor.settings
  add column min_retention interval not null default interval '1 day'
    check (min_retention >= interval '0'),
  -- 1 a second: a limit set by a login that is not an admin can slow a queue
  -- or a kind to 86,400 starts a day, never stop it; a slower rate is an
  -- operator's decision (set_rate_limit as an admin, or pause_queue).
  add column min_rate_limit double precision not null default 1
    check (min_rate_limit >= 0 and min_rate_limit <= 1000000);
comment on column conductor.settings.min_retention is
  'The shortest retain_succeeded or retain_failed a login without conductor_admin may give a kind '
  '(configure_kind), and the least apply_retention keeps a run of a kind whose retention no admin set '
  '(default 1 day; 0: no floor).';
comment on column conductor.settings.min_rate_limit is
  'The slowest per_second a login without conductor_admin may set with set_rate_limit '
  '(default 1 start a second; 0: no floor). Pausing a queue is pause_queue''s (admin).';

commit;
