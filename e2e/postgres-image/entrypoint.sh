#!/bin/sh
# First start (empty $PGDATA): a cluster whose superuser is $POSTGRES_USER with $POSTGRES_PASSWORD
# (SCRAM over TCP from anywhere, trust on the local socket, as the official image), and the database
# $POSTGRES_DB. Then the server runs in the foreground as `postgres`, listening on every address.
set -eu
POSTGRES_USER="${POSTGRES_USER:-postgres}"
POSTGRES_DB="${POSTGRES_DB:-$POSTGRES_USER}"
if [ "$(id -u)" = 0 ]; then
  mkdir -p "$PGDATA" /run/postgresql
  chown -R postgres:postgres "$PGDATA" /run/postgresql
  chmod 700 "$PGDATA"
  exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  : "${POSTGRES_PASSWORD:?set POSTGRES_PASSWORD}"
  pwfile="$(mktemp)"
  printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
  initdb -D "$PGDATA" -U "$POSTGRES_USER" --pwfile="$pwfile" --auth-local=trust --auth-host=scram-sha-256 >/dev/null
  rm -f "$pwfile"
  echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
  if [ "$POSTGRES_DB" != postgres ]; then
    printf 'CREATE DATABASE "%s" OWNER "%s";\n' "$POSTGRES_DB" "$POSTGRES_USER" \
      | postgres --single -D "$PGDATA" postgres >/dev/null
  fi
  echo "postgres-entrypoint: initialised $PGDATA (database $POSTGRES_DB, user $POSTGRES_USER)" >&2
fi
if [ "$1" = postgres ]; then
  shift
  exec postgres -D "$PGDATA" -c listen_addresses='*' "$@"
fi
exec "$@"
