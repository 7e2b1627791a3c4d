#!/usr/bin/env bash
# The cluster figures in docs/performance.md ("Several nodes"): the same load (M games,
# default 200) on one node, on one node in cluster mode, and spread over two nodes so
# that every game's two players sit on different nodes and every move crosses NATS.
# Needs the dist build of both binaries (see common.sh), the local Postgres (user
# postgres, trust auth on 127.0.0.1:5432) and NATS on 127.0.0.1:4222 (NATS_URL to change
# it). Prints one JSON report per line, each with a "name" added. LOADGEN_DURATION (20s)
# and GAMES change the run.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=loadgen/common.sh
source loadgen/common.sh
games=${GAMES:-200}
nats=${NATS_URL:-nats://127.0.0.1:4222}
scratch=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$scratch"
}
trap cleanup EXIT

# Starts a node on PORT with extra options; its pid goes to $pids.
start_node() {
  local port=$1 database=$2
  shift 2
  # shellcheck disable=SC2086
  "$server" serve --listen "127.0.0.1:$port" --database "$database" $lift "$@" \
    2> "$scratch/node-$port.log" &
  pids+=($!)
  for _ in $(seq 100); do
    grep -q listening "$scratch/node-$port.log" && return
    sleep 0.1
  done
  echo "node on $port did not start" >&2
  cat "$scratch/node-$port.log" >&2
  exit 1
}

stop_nodes() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  pids=()
}

# One run: NAME, then loadgen options; NODES lists the nodes' ports and NODE_OPTIONS
# their extra options.
measure() {
  local name=$1 database="postgres://postgres@127.0.0.1:5432/loadgen_$1"
  shift
  dropdb -h 127.0.0.1 -U postgres --if-exists "loadgen_$name"
  createdb -h 127.0.0.1 -U postgres "loadgen_$name"
  local port
  for port in $NODES; do
    # shellcheck disable=SC2086
    start_node "$port" "$database" $NODE_OPTIONS --node-name "$name-$port"
  done
  "$loadgen" run --server-pid "${pids[0]}" --games "$games" --duration "$duration" --json "$@" \
    | sed "s/^{/{\"name\":\"$name\",/"
  stop_nodes
  dropdb -h 127.0.0.1 -U postgres "loadgen_$name"
}

# A single node, no cluster: the reference.
NODES="18301" NODE_OPTIONS="" measure single --server 127.0.0.1:18301

# One node in cluster mode: the cost of leases and of publishing every update to NATS.
NODES="18311" NODE_OPTIONS="--nats $nats" measure cluster_one --server 127.0.0.1:18311

# Two nodes, every game's players on both: every move is relayed by NATS.
NODES="18321 18322" NODE_OPTIONS="--nats $nats" measure cluster_spread \
  --server 127.0.0.1:18321 --spread-to 127.0.0.1:18322
