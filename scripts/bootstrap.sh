#!/bin/sh
# Makes a fresh clone runnable: installs npm dependencies when the lock file changed,
# builds the pinned Go tools into the user cache. Idempotent and quiet when nothing to do.
set -eu
cd "$(dirname "$0")/.."
tools=""
for arg in "$@"; do
  case "$arg" in --*) ;; *) tools="$tools $arg" ;; esac
done
# The Go tools build (minutes of CPU on a first run) while npm and apt fetch (network and disk).
# shellcheck disable=SC2086
sh scripts/tools.sh $tools &
tools_pid=$!
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund
fi
# apt_need COMMAND PACKAGE WHY: installs a Debian package when COMMAND is missing.
apt_need() {
  command -v "$1" >/dev/null 2>&1 && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "oncely: installing $2 (Debian package) for $3 ..." >&2
    apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$2" >&2
  else
    echo "oncely: $2 is not installed; $3 need it (apt-get install $2)" >&2
    exit 1
  fi
}

for arg in "$@"; do
  case "$arg" in
    --media)
      apt_need ffprobe ffmpeg "audio/video renditions and their tests"
      apt_need pdftoppm poppler-utils "PDF previews and their tests" ;;
    --scan) apt_need clamd clamav-daemon "the virus-scan tests (a clamd they start with their own signatures)" ;;
    --browser) apt_need "${CHROMIUM_PATH:-chromium}" chromium "the browser tests (driven by playwright-core)" ;;
    --docker)
      # The compose smoke: an engine (started by the test when none answers) and mmdebstrap
      # for the local base-image stand-ins (test/docker/stand-ins.sh).
      docker info >/dev/null 2>&1 || apt_need dockerd docker.io "the compose smoke test (the engine)"
      apt_need mmdebstrap mmdebstrap "the compose smoke test (base images built from Debian's packages)" ;;
    *) ;;
  esac
done
wait "$tools_pid"
