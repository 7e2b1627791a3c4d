#!/usr/bin/env bash
# The load generator's table in docs/performance.md ("Load generator"): 1 and 400 games
# on SQLite and on Postgres with the echo baseline, 400 games started all at once
# (`--ramp 0s`) on each, then 400 games with 1,000 idle sockets on each, and one game
# with 10,000 idle sockets, 20 s a run (LOADGEN_DURATION to change it). Prints one JSON
# report per line, each with a "name" added.
# Postgres is reached without TLS (sslmode=disable): it runs on the same host, over
# loopback, as in docker-compose.yml, where the database's image offers no TLS. Debian's
# Postgres offers it, and sqlx then takes it, which cost the server about 8 µs a move.
# Needs the dist build of both binaries (see common.sh) and the local Postgres (user
# postgres, trust auth on 127.0.0.1:5432); each run gets a fresh SQLite file or Postgres
# database.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=loadgen/common.sh
source loadgen/common.sh
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# One run: NAME DATABASE(sqlite|postgres) GAMES [more loadgen options].
measure() {
  local name=$1 kind=$2 games=$3 url
  shift 3
  if [ "$kind" = sqlite ]; then
    url="sqlite://$scratch/$name.db"
  else
    dropdb -h 127.0.0.1 -U postgres --if-exists "loadgen_$name"
    createdb -h 127.0.0.1 -U postgres "loadgen_$name"
    url="postgres://postgres@127.0.0.1:5432/loadgen_$name?sslmode=disable"
  fi
  "$loadgen" run --spawn-server "$server serve --database $url $lift" \
    --games "$games" --duration "$duration" --json "$@" | sed "s/^{/{\"name\":\"$name\",/"
  if [ "$kind" = postgres ]; then dropdb -h 127.0.0.1 -U postgres "loadgen_$name"; fi
}

measure sqlite_m1 sqlite 1 --baseline
measure postgres_m1 postgres 1 --baseline
measure sqlite_m400 sqlite 400 --baseline
measure postgres_m400 postgres 400 --baseline
measure sqlite_m400_ramp0 sqlite 400 --ramp 0s
measure postgres_m400_ramp0 postgres 400 --ramp 0s
measure sqlite_m400_idle sqlite 400 --idle 1000
measure postgres_m400_idle postgres 400 --idle 1000
measure sqlite_m1_idle10000 sqlite 1 --idle 10000
