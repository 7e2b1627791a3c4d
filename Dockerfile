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
# of the cached target directory, which does not outlive this step.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/build/target \
    cargo build --release --locked -p carcassonne-server \
    && cp target/release/carcassonne-server /usr/local/bin/carcassonne-server

# --- Run -----------------------------------------------------------------------------
FROM debian:bookworm-slim AS run

# curl for the compose health check.
RUN apt-get update \
    && apt-get install --yes --no-install-recommends curl \
    && rm -rf /var/lib/apt/lists/*

# A fixed unprivileged uid, so that volume permissions are predictable. Its home is the
# working directory, where the default SQLite file is created when DATABASE_URL is unset.
RUN useradd --system --uid 10001 --user-group --create-home \
        --home-dir /var/lib/carcassonne carcassonne

COPY --from=build /usr/local/bin/carcassonne-server /usr/local/bin/carcassonne-server

USER carcassonne:carcassonne
WORKDIR /var/lib/carcassonne

ENV LISTEN_ADDR=0.0.0.0:8080
EXPOSE 8080

ENTRYPOINT ["carcassonne-server"]
CMD ["serve"]
