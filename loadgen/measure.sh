#!/usr/bin/env bash
# The load generator's table in docs/performance.md ("Load generator"): 1 and 400 games
# on SQLite and on Postgres with the echo baseline, then 400 games with 1,000 idle sockets
# on each, 20 s a run (LOADGEN_DURATION to change it). Prints one JSON report per line, each with a "name" added.
# Needs a release build of both binaries and the local Postgres (user postgres, trust
# auth on 127.0.0.1:5432); each run gets a fresh SQLite file or Postgres database.
set -euo pipefail
cd "$(dirname "$0")/.."
target=${CARGO_TARGET_DIR:-target}
server=$target/release/carcassonne-server
loadgen=$target/release/carcassonne-loadgen
duration=${LOADGEN_DURATION:-20s}
lift="--messages-per-second 1000000 --message-burst 1000000 \
  --requests-per-second 1000000 --request-burst 1000000 \
  --max-open-lobbies 100000 --max-open-lobbies-per-client 100000 \
  --max-connections-per-ip 0 --max-pending-connections-per-ip 0 \
  --max-pending-connections 100000 --max-connections 100000 --max-tcp-connections 100000"
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
    url="postgres://postgres@127.0.0.1:5432/loadgen_$name"
  fi
  "$loadgen" run --spawn-server "$server serve --database $url $lift" \
    --games "$games" --duration "$duration" --json "$@" | sed "s/^{/{\"name\":\"$name\",/"
  if [ "$kind" = postgres ]; then dropdb -h 127.0.0.1 -U postgres "loadgen_$name"; fi
}

measure sqlite_m1 sqlite 1 --baseline
measure postgres_m1 postgres 1 --baseline
measure sqlite_m400 sqlite 400 --baseline
measure postgres_m400 postgres 400 --baseline
measure sqlite_m400_idle sqlite 400 --idle 1000
measure postgres_m400_idle postgres 400 --idle 1000
