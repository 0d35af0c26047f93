// Runs once in the worker's shared workflow context, before the SDK freezes its globals
// (the bundle's preloadModules, src/paths.ts). The SDK captures a stack trace for every
// promise a workflow creates, mapping each frame through the bundle's source map, only to
// answer the `__stack_trace` query; an upload's run lives one workflow task, so nobody asks,
// and the capture was a fifth of the worker's CPU per upload (bench/HISTORY.md, #42). With
// no frames captured, that query and errors thrown by workflow code carry no stack trace;
// activities' failures keep theirs.
Error.stackTraceLimit = 0;

export {};
