// Loaded (execArgv --require) into the Temporal SDK's workflow thread when
// WORKFLOW_SANDBOX_WATCHDOG is false (src/temporal/workflow-thread.ts). The SDK bounds every
// call into the workflow sandbox with vm's `timeout`, and node makes and joins a watchdog
// thread for each such call (nodejs/node#47739): ~130 µs of CPU a call, a few dozen calls per
// upload. Here calls run unbounded; each marks its start in a shared clock instead, so the
// worker's main thread can still tell a workflow that never yields (workflow-thread.ts).
/* eslint-disable @typescript-eslint/no-require-imports -- CommonJS: node --require loads it into the SDK's thread */
'use strict';
const vm = require('node:vm');
const { getEnvironmentData } = require('node:worker_threads');

const clock = getEnvironmentData('oncely.sandboxClock');
const started = clock ? new BigInt64Array(clock) : undefined;
const run = vm.Script.prototype.runInContext;

vm.Script.prototype.runInContext = function runInContext(context, options) {
  if (!options || options.timeout === undefined) return run.call(this, context, options);
  const { timeout: _unbounded, ...rest } = options;
  // Nested calls (a sandbox call that enters again) keep the outermost start.
  const outermost = started !== undefined && Atomics.load(started, 0) === 0n;
  if (outermost) Atomics.store(started, 0, BigInt(Date.now()));
  try {
    return run.call(this, context, rest);
  } finally {
    if (outermost) Atomics.store(started, 0, 0n);
  }
};
