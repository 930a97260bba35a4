# HAProxy from Debian's package, with deploy/haproxy.cfg: the balancer of compose.yaml.
#   podman build -f deploy/haproxy.Dockerfile -t pagescript-haproxy deploy
ARG BASE=debian:bookworm-slim
FROM ${BASE}
RUN apt-get update \
 && apt-get install -y --no-install-recommends haproxy \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin
COPY haproxy.cfg /etc/haproxy/haproxy.cfg
USER haproxy
CMD ["haproxy", "-W", "-db", "-f", "/etc/haproxy/haproxy.cfg"]
