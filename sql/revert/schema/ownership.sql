-- Revert conductor:schema/ownership from pg

begin;

alter table conductor.settings
  drop column min_rate_limit,
  drop column min_retention;
alter table conductor.workers drop column owner;
alter table conductor.rate_limits drop column owner;
alter table conductor.kinds drop column owner;

commit;
