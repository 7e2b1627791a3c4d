# What loadgen/measure.sh and loadgen/measure-cluster.sh share, sourced by both: the
# binaries, the run's duration, and the server flags that lift its per-client limits (all
# of a load run comes from one address; see docs/performance.md, "Lifting the server's
# limits"). The binaries are those of the `dist` profile (Cargo.toml: release with
# link-time optimisation across crates), the build an operator runs; LOADGEN_PROFILE=release
# measures the plain release build instead.
target=${CARGO_TARGET_DIR:-target}
profile=${LOADGEN_PROFILE:-dist}
server=$target/$profile/carcassonne-server
loadgen=$target/$profile/carcassonne-loadgen
duration=${LOADGEN_DURATION:-20s}
lift="--messages-per-second 1000000 --message-burst 1000000 \
  --requests-per-second 1000000 --request-burst 1000000 \
  --max-open-lobbies 100000 --max-open-lobbies-per-client 100000 \
  --max-connections-per-ip 0 --max-pending-connections-per-ip 0 \
  --max-pending-connections 100000 --max-connections 100000 --max-tcp-connections 100000"
