# Redis from Debian's package, for compose.yaml and the container tests (no image registry needed).
#   podman build -f deploy/redis.Dockerfile -t pagescript-redis deploy
ARG BASE=debian:bookworm-slim
FROM ${BASE}
RUN apt-get update \
 && apt-get install -y --no-install-recommends redis-server \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin
USER redis
# No persistence: the limits' counts are short-lived.
CMD ["redis-server", "--bind", "127.0.0.1", "--port", "6379", "--save", "", "--appendonly", "no"]
