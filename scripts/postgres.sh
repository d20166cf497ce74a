#!/usr/bin/env bash
# Starts a local PostgreSQL for Corral's tests and for `corral up --database`.
#
# Idempotent: installs Debian's postgresql package if it is missing, starts
# the default cluster if it is not running, makes sure a superuser role
# `corral` (password `corral`) and a database `corral` exist, and prints the
# DSN on stdout. The server listens on localhost only (Debian's default
# listen_addresses); this script never changes that.
#
# The store tests read the DSN from CORRAL_TEST_POSTGRES and default to the
# one printed here; the role is a superuser because each test creates and
# drops its own database.
set -euo pipefail

dsn="postgres://corral:corral@127.0.0.1:5432/corral?sslmode=disable"

sudo=""
as_postgres=(runuser -u postgres --)
if [ "$(id -u)" -ne 0 ]; then
  sudo="sudo"
  as_postgres=(sudo -u postgres)
fi

if ! command -v pg_lsclusters >/dev/null; then
  echo "postgres: installing postgresql" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends postgresql >&2
fi

# The newest installed cluster, usually "15 main" on Debian 12.
read -r ver cluster port status _ < <(pg_lsclusters --no-header | sort -V | tail -n 1)
if [ -z "${ver:-}" ]; then
  ver=$(ls /usr/lib/postgresql | sort -V | tail -n 1)
  echo "postgres: creating cluster $ver main" >&2
  $sudo pg_createcluster "$ver" main >&2
  read -r ver cluster port status _ < <(pg_lsclusters --no-header | sort -V | tail -n 1)
fi
if [ "$port" != 5432 ]; then
  dsn="postgres://corral:corral@127.0.0.1:${port}/corral?sslmode=disable"
fi
if [ "$status" != online ]; then
  echo "postgres: starting cluster $ver $cluster" >&2
  $sudo pg_ctlcluster "$ver" "$cluster" start >&2
fi

# Wait until the server accepts connections on the unix socket.
for _ in $(seq 1 50); do
  "${as_postgres[@]}" psql -p "$port" -qAtc 'select 1' >/dev/null 2>&1 && break
  sleep 0.2
done

psql_admin() { "${as_postgres[@]}" psql -p "$port" -v ON_ERROR_STOP=1 -qAt "$@"; }

if [ "$(psql_admin -c "select 1 from pg_roles where rolname = 'corral'")" != 1 ]; then
  echo "postgres: creating role corral" >&2
  psql_admin -c "create role corral with login superuser password 'corral'"
else
  psql_admin -c "alter role corral with login superuser password 'corral'"
fi
if [ "$(psql_admin -c "select 1 from pg_database where datname = 'corral'")" != 1 ]; then
  echo "postgres: creating database corral" >&2
  psql_admin -c "create database corral owner corral"
fi

echo "$dsn"
