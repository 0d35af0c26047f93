#!/bin/sh
# Makes a fresh clone runnable: installs npm dependencies when the lock file changed,
# builds the pinned Go tools into the user cache. Idempotent and quiet when nothing to do.
set -eu
cd "$(dirname "$0")/.."
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund
fi
tools=""
for arg in "$@"; do
  case "$arg" in
    --media)
      # ffmpeg/ffprobe for audio and video renditions, from Debian's packages when missing.
      if ! command -v ffprobe >/dev/null 2>&1; then
        if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
          echo "oncely: installing ffmpeg (Debian package) ..." >&2
          apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends ffmpeg >&2
        else
          echo "oncely: ffmpeg is not installed; audio/video tests need it (apt-get install ffmpeg)" >&2
          exit 1
        fi
      fi ;;
    --browser)
      # Debian's Chromium for the browser tests (playwright-core drives it; no downloads).
      if [ ! -x "${CHROMIUM_PATH:-/usr/bin/chromium}" ]; then
        if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
          echo "oncely: installing chromium (Debian package) ..." >&2
          apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >&2
        else
          echo "oncely: chromium is not installed; browser tests need it (apt-get install chromium)" >&2
          exit 1
        fi
      fi ;;
    *) tools="$tools $arg" ;;
  esac
done
# shellcheck disable=SC2086
sh scripts/tools.sh $tools
