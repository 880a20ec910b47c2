#!/usr/bin/env bash
# Install what Conductor needs, then the .venv. Idempotent.
#
#   scripts/install-deps.sh demo   what `make demo` needs: the PostgreSQL server
#                                  (and python3-venv when ensurepip is missing),
#                                  then pip install -e '.[dashboard]' (the
#                                  worker's own deps, and the dashboard, so that
#                                  `pyconductor dashboard` and `serve` show the
#                                  demo's runs)
#   scripts/install-deps.sh [all]  what the tests need as well: pgTAP and
#                                  plpgsql_check for that server version
#                                  (sql/tests/schema/plpgsql_check_clean.sql),
#                                  pg_prove, sqitch (+ DBD::Pg,
#                                  psql), pgbouncer and iproute2 (the topology
#                                  tests), Node.js and npm (the Node worker, then
#                                  npm ci in workers/node), chromium for the
#                                  browser tests (only as root; optional), and the
#                                  extras the tests cover
#                                  (pip install -e '.[test,dashboard,metrics,django,docs,otel]')
#
# pip runs only when pyproject.toml changed or the extras asked for are not
# installed yet (stamp .venv/.conductor-deps: its sha256 and the extras).
# apt waits up to 10 minutes for another install's lock instead of failing.
# Not root and something missing: prints what to install and exits 1.
# CONDUCTOR_SKIP_SYSTEM_DEPS=1 skips the system part (e.g. embedded binaries).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
mode=${1:-all}
case $mode in
  demo | all) ;;
  *) printf 'install-deps: unknown mode %s (demo or all)\n' "$mode" >&2; exit 2 ;;
esac

log() { printf 'install-deps: %s\n' "$*" >&2; }

server_version() {
  # Highest PostgreSQL major version with server binaries under /usr/lib/postgresql.
  local d best=""
  for d in /usr/lib/postgresql/*/bin/initdb; do
    [[ -x $d ]] || continue
    local v=${d#/usr/lib/postgresql/}; v=${v%%/*}
    if [[ -z $best ]] || (( v > best )); then best=$v; fi
  done
  printf '%s' "$best"
}

missing_packages() {
  local pkgs=() ver
  ver=$(server_version)
  if [[ -z $ver ]]; then
    pkgs+=(postgresql)
  elif [[ $mode == all ]]; then
    [[ -f /usr/share/postgresql/$ver/extension/pgtap.control ]] || pkgs+=("postgresql-$ver-pgtap")
    [[ -f /usr/share/postgresql/$ver/extension/plpgsql_check.control ]] || pkgs+=("postgresql-$ver-plpgsql-check")
  fi
  python3 -c 'import ensurepip, venv' 2>/dev/null || pkgs+=(python3-venv)
  if [[ $mode == all ]]; then
    command -v psql >/dev/null || pkgs+=(postgresql-client)
    command -v pg_prove >/dev/null || pkgs+=(libtap-parser-sourcehandler-pgtap-perl)
    command -v sqitch >/dev/null || pkgs+=(sqitch)
    perl -MDBD::Pg -e1 2>/dev/null || pkgs+=(libdbd-pg-perl)
    command -v pgbouncer >/dev/null || [[ -x /usr/sbin/pgbouncer ]] || pkgs+=(pgbouncer)
    command -v ip >/dev/null || [[ -x /usr/sbin/ip ]] || pkgs+=(iproute2)
    command -v node >/dev/null || pkgs+=(nodejs)
    command -v npm >/dev/null || pkgs+=(npm)
  fi
  if (( ${#pkgs[@]} )); then printf '%s\n' "${pkgs[@]}"; fi
}

apt_updated=0
apt_install() {
  export DEBIAN_FRONTEND=noninteractive
  if (( ! apt_updated )); then
    log "apt-get update"
    apt-get -o DPkg::Lock::Timeout=600 update -qq
    apt_updated=1
  fi
  log "apt-get install $*"
  apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "$@" >/dev/null
}

if [[ ${CONDUCTOR_SKIP_SYSTEM_DEPS:-0} != 1 ]]; then
  mapfile -t need < <(missing_packages)
  if (( ${#need[@]} )); then
    if (( EUID != 0 )); then
      log "missing system packages (run as root, or install them yourself):"
      log "  sudo apt-get update && sudo apt-get install -y ${need[*]}"
      exit 1
    fi
    if [[ " ${need[*]} " == *" postgresql "* ]]; then
      # We run private clusters (pyconductor devdb); no system cluster on port 5432.
      mkdir -p /etc/postgresql-common/createcluster.d
      echo "create_main_cluster = false" >/etc/postgresql-common/createcluster.d/conductor.conf
    fi
    apt_install "${need[@]}"
    # The server may have come in just now: its pgTAP and plpgsql_check packages are named by version.
    mapfile -t need < <(missing_packages)
    if (( ${#need[@]} )); then apt_install "${need[@]}"; fi
    mapfile -t need < <(missing_packages)
    if (( ${#need[@]} )); then
      log "still missing after apt-get install: ${need[*]}"
      exit 1
    fi
  fi
fi

# The dashboard's browser tests: Playwright drives Debian's /usr/bin/chromium (never
# `playwright install`, whose download does not work here). Optional: installed only
# as root; without it those tests skip and say why.
if [[ $mode == all && ${CONDUCTOR_SKIP_SYSTEM_DEPS:-0} != 1 && ! -x /usr/bin/chromium ]]; then
  if (( EUID == 0 )); then
    apt_install chromium
  else
    log "no /usr/bin/chromium: the browser tests will skip (sudo apt-get install -y chromium)"
  fi
fi

if [[ ! -x .venv/bin/python ]]; then
  log "creating .venv"
  python3 -m venv .venv
fi
stamp=.venv/.conductor-deps
hash=$(sha256sum pyproject.toml | cut -d' ' -f1)
if [[ $mode == all ]]; then
  extras=test,dashboard,metrics,django,docs,otel
  imports='import pyconductor, pytest, starlette, uvicorn, prometheus_client, django, django_tasks, mkdocs, opentelemetry.sdk'
else
  extras=dashboard
  imports='import pyconductor, starlette, uvicorn'
fi
have=$(cat "$stamp" 2>/dev/null || true)
# the stamp says "<hash> <extras>"; what `all` installed serves `demo` too (it holds dashboard)
if [[ ${have%% *} != "$hash" || ( $mode == all && $have != "$hash $extras" ) ]] ||
   ! .venv/bin/python -c "$imports" 2>/dev/null; then
  log "pip install -e '.${extras:+[$extras]}'"
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e ".${extras:+[$extras]}"
  printf '%s %s\n' "$hash" "$extras" >"$stamp"
fi
# The Node.js worker's dependency (pg) and its test's (@opentelemetry/api and
# sdk-trace-base, dev dependencies), pinned by its package-lock.json.
if [[ $mode == all && -f workers/node/package-lock.json &&
      ( ! -d workers/node/node_modules || workers/node/package-lock.json -nt workers/node/node_modules ) ]]; then
  log "npm ci (workers/node)"
  (cd workers/node && npm ci --silent --no-audit --no-fund)
fi
log "ok"
