# What loadgen/measure.sh and loadgen/measure-cluster.sh share, sourced by both: the
# binaries of a release build, the run's duration, and the server flags that lift its
# per-client limits (all of a load run comes from one address; see docs/performance.md,
# "Lifting the server's limits").
target=${CARGO_TARGET_DIR:-target}
server=$target/release/carcassonne-server
loadgen=$target/release/carcassonne-loadgen
duration=${LOADGEN_DURATION:-20s}
lift="--messages-per-second 1000000 --message-burst 1000000 \
  --requests-per-second 1000000 --request-burst 1000000 \
  --max-open-lobbies 100000 --max-open-lobbies-per-client 100000 \
  --max-connections-per-ip 0 --max-pending-connections-per-ip 0 \
  --max-pending-connections 100000 --max-connections 100000 --max-tcp-connections 100000"
