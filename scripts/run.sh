#!/bin/sh
# Entry point of the npm scripts: Node 26 first on PATH (scripts/node.sh), dependencies and
# pinned tools in place (scripts/bootstrap.sh), then the task.
#   run.sh start | test | bench | chaos | start-stress [args...]
set -eu
cd "$(dirname "$0")/.."
. scripts/node.sh
task=$1
shift
case "$task" in
  start)
    sh scripts/bootstrap.sh
    # The production bundle on the production launcher (its node flags live there alone).
    node scripts/build.mjs
    exec sh bin/oncely-node "$@" ;;
  test)
    sh scripts/bootstrap.sh --media --scan --browser --docker temporal-dev versitygw toxiproxy temporal-server temporal-sql-tool compose jaeger
    npm run typecheck
    npm run lint
    npx vitest run
    npx vitest run --config vitest.docker.config.ts
    exec npx vitest run --config vitest.chaos.config.ts ;;
  bench)
    sh scripts/bootstrap.sh
    npm run build
    exec npx tsx bench/run.ts "$@" ;;
  start-stress)
    sh scripts/bootstrap.sh
    npm run build
    exec npx tsx test/stress/start-stress.ts "$@" ;;
  chaos)
    sh scripts/bootstrap.sh toxiproxy
    exec npx tsx chaos/run.ts "$@" ;;
  *) echo "usage: run.sh start|test|bench|chaos|start-stress [args...]" >&2; exit 2 ;;
esac
