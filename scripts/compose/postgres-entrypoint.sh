#!/bin/sh
# The official postgres image's first start, for the settings deploy/compose.yaml uses: an empty data
# directory becomes a cluster whose superuser is POSTGRES_USER (password POSTGRES_PASSWORD, asked of every
# client over the network) with the database POSTGRES_DB; then PostgreSQL serves on every interface.
set -eu
: "${POSTGRES_PASSWORD:?set POSTGRES_PASSWORD: clients reach the database over the network with it}"
user=${POSTGRES_USER:-postgres}
db=${POSTGRES_DB:-$user}
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  password=$(mktemp)
  printf '%s\n' "$POSTGRES_PASSWORD" >"$password"
  # UTF-8, as the official image's cluster: under SQL_ASCII (initdb's default without a locale) psycopg reads text as bytes.
  initdb --username="$user" --pwfile="$password" --auth-local=trust --auth-host=scram-sha-256 \
    --encoding=UTF8 --locale=C.UTF-8 -D "$PGDATA" >/dev/null
  rm -f "$password"
  echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
  if [ "$db" != postgres ]; then
    echo "CREATE DATABASE \"$db\" OWNER \"$user\"" | postgres --single -D "$PGDATA" -j postgres >/dev/null 2>&1
  fi
  echo "made the cluster in $PGDATA: user $user, database $db"
fi
exec postgres -D "$PGDATA" -c listen_addresses='*'
