# Gatehouse container image.
#
#   docker build -t gatehouse .
#   docker run -p 8080:8080 -v gatehouse-data:/data \
#     -e GATEHOUSE_ISSUER=https://id.example.com -e GATEHOUSE_CLIENT_ID=... \
#     -e GATEHOUSE_SECRET_KEY="$(docker run --rm gatehouse keygen)" \
#     -e GATEHOUSE_PUBLIC_URL=https://app.example.com -e GATEHOUSE_ROUTES=/api=http://api:9000 gatehouse
#
# Tests/GatehouseTests/Docker/DockerfileShapeTests.swift checks the shape of this file.

# ---- build: the same Swift minor version the project is developed with ---------------------------
FROM swift:6.3-bookworm AS build

# libssl-dev: the COpenSSL target (TLS to the provider, https upstreams and wss:// tunnels) builds
# against OpenSSL 3's headers; libyaml-dev: the configuration file's parser (CYAML).
RUN export DEBIAN_FRONTEND=noninteractive \
    && apt-get update \
    && apt-get install -y --no-install-recommends libsqlite3-dev zlib1g-dev libssl-dev libpq-dev libyaml-dev binutils \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /src

# Dependencies first, so that editing a source file does not fetch them again.
COPY Package.swift ./
# A mirror of https://github.com/ (a URL or path ending in "/") for machines without internet access,
# e.g. `--build-arg GITHUB_MIRROR=/opt/swift-packages/` with that directory bound in (scripts/container-test
# does this). Empty by default: the packages come from GitHub.
ARG GITHUB_MIRROR=""
RUN if [ -n "$GITHUB_MIRROR" ]; then git config --global url."$GITHUB_MIRROR".insteadOf https://github.com/; fi \
    && swift package resolve

COPY Sources ./Sources
COPY Tests ./Tests
COPY Migrations ./Migrations
COPY Public ./Public

# The Swift runtime and FoundationEssentials (the only Foundation module Gatehouse imports: no ICU,
# no FoundationNetworking) are linked in. What stays dynamic (ldd of this build) is
# libsqlite3.so.0, libssl.so.3 and libcrypto.so.3, libz.so.1,
# libstdc++.so.6, libgcc_s, libm and libc, and libpq.so.5, opened at run time by the PostgreSQL
# engine only: the runtime stage installs exactly those. Stripping takes the binary from ~60 MB to ~22 MB.
RUN swift build -c release --static-swift-stdlib --product gatehouse \
    && install -D -m 0755 "$(swift build -c release --static-swift-stdlib --show-bin-path)/gatehouse" /out/gatehouse \
    && strip /out/gatehouse

# ---- runtime -------------------------------------------------------------------------------------
FROM debian:bookworm-slim

# curl serves the HEALTHCHECK (the gateway itself does not load libcurl); libssl3 is the TLS of the
# provider calls, https upstreams and wss:// tunnels; ca-certificates is the trusted bundle
# (/etc/ssl/certs/ca-certificates.crt); libpq5 reaches PostgreSQL when GATEHOUSE_DATABASE is a postgres:// URI;
# libyaml-0-2 reads GATEHOUSE_CONFIG; libgcc-s1 and libc6 come with the base image.
RUN export DEBIAN_FRONTEND=noninteractive \
    && apt-get update \
    && apt-get install -y --no-install-recommends \
        ca-certificates libssl3 libsqlite3-0 libpq5 libyaml-0-2 libstdc++6 zlib1g tzdata curl \
    && rm -rf /var/lib/apt/lists/*

# A fixed numeric id, so that `runAsNonRoot` (Kubernetes) can verify the user without /etc/passwd.
RUN groupadd --system --gid 10001 gatehouse \
    && useradd --system --uid 10001 --gid gatehouse --home-dir /app --no-create-home \
        --shell /usr/sbin/nologin gatehouse \
    && mkdir -p /data \
    && chown gatehouse:gatehouse /data

WORKDIR /app
COPY --from=build /out/gatehouse /app/gatehouse
COPY Public /app/Public
# Also embedded in the binary; shipped so an operator can read what `gatehouse migrate` applies.
COPY Migrations /app/Migrations

# GATEHOUSE_LISTEN is left to its default: 0.0.0.0:8080 for plain HTTP; with GATEHOUSE_TLS_CERT or
# GATEHOUSE_ACME_DIRECTORY, HTTPS on 0.0.0.0:8443 and the redirect listener (308 to https://, ACME
# http-01) on 0.0.0.0:8080, so `docker run -p 443:8443 -p 80:8080` faces the browser directly.
ENV GATEHOUSE_DATABASE=/data/gatehouse.sqlite \
    GATEHOUSE_PUBLIC_DIR=/app/Public

# The SQLite database (and its -wal/-shm files) lives here; mount a volume to keep sessions (and the
# ACME account and certificate, which the session store keeps).
VOLUME /data
EXPOSE 8080 8443

USER 10001:10001

# The HTTPS port when the environment turns HTTPS on (the certificate may be ACME's placeholder, so
# it is not verified here: /healthz is liveness), else the plain one.
HEALTHCHECK --interval=15s --timeout=3s --start-period=10s --retries=3 \
    CMD if [ -n "$GATEHOUSE_TLS_CERT$GATEHOUSE_ACME_DIRECTORY" ]; \
        then curl -fsSk -o /dev/null https://127.0.0.1:8443/healthz; \
        else curl -fsS -o /dev/null http://127.0.0.1:8080/healthz; fi

# serve drains in-flight requests for up to 25 s on SIGTERM; `docker stop -t 30` leaves it the time.
STOPSIGNAL SIGTERM
ENTRYPOINT ["/app/gatehouse"]
CMD ["serve"]
