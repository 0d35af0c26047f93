# clamd for the compose smoke: Debian's clamav-daemon with the signature file the test
# writes into the build context (no freshclam: signatures cannot be downloaded here).
FROM debian:bookworm-slim
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends clamav-daemon clamdscan \
 && rm -rf /var/lib/apt/lists/* /var/lib/clamav/*
COPY clamd.conf /etc/clamav/clamd.conf
COPY oncely-test.hdb /var/lib/clamav/oncely-test.hdb
USER clamav
CMD ["clamd", "--foreground"]
