# syntax=docker/dockerfile:1

# The Carcassonne server: built in the Rust image, run from a slim Debian image as an
# unprivileged user. Build with `docker build -t carcassonne-server .`, or through
# docker-compose.yml together with its Postgres.

# --- Build ---------------------------------------------------------------------------
FROM rust:1.95-bookworm AS build
WORKDIR /build

# The whole workspace is needed: the server depends on core and store, and the store
# embeds the SQL files of migrations/ at compile time.
COPY . .

# The cache mounts keep the registry and the compiled dependencies between builds, so that
# a change to the server's code does not rebuild sqlx and axum. The binary is copied out
# of the cached target directory, which does not outlive this step. The `dist` profile is
# the release profile, stripped, with link-time optimisation across crates: about a tenth
# less CPU per move under load (see Cargo.toml and docs/performance.md;
# `--profile profiling` keeps line tables for perf).
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/build/target \
    cargo build --profile dist --locked -p carcassonne-server \
    && cp target/dist/carcassonne-server /usr/local/bin/carcassonne-server

# --- Run -----------------------------------------------------------------------------
FROM debian:bookworm-slim AS run

# A fixed unprivileged uid, so that volume permissions are predictable. Its home is the
# working directory; the SQLite file lives in the data directory below it, a volume.
RUN useradd --system --uid 10001 --user-group --create-home \
        --home-dir /var/lib/carcassonne carcassonne \
    && mkdir /var/lib/carcassonne/data \
    && chown carcassonne:carcassonne /var/lib/carcassonne/data

COPY --from=build /usr/local/bin/carcassonne-server /usr/local/bin/carcassonne-server

USER carcassonne:carcassonne
WORKDIR /var/lib/carcassonne

# Without a DATABASE_URL of its own (compose sets a Postgres one), the server keeps its
# games in an SQLite file on this volume, so they survive a new container.
VOLUME ["/var/lib/carcassonne/data"]
ENV LISTEN_ADDR=0.0.0.0:8080 \
    DATABASE_URL=sqlite:///var/lib/carcassonne/data/carcassonne.db \
    HEALTHCHECK_URL=http://127.0.0.1:8080/readyz
EXPOSE 8080

# The binary checks itself: no curl in the image. Ready means the database answers and
# the server is not draining; the check waits at most 3 s.
HEALTHCHECK --interval=10s --timeout=5s --start-period=15s --retries=3 \
    CMD ["carcassonne-server", "healthcheck"]

ENTRYPOINT ["carcassonne-server"]
CMD ["serve"]
