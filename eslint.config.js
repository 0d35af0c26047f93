// Lint config. The one rule that matters most: workflow code runs in Temporal's
// deterministic sandbox, so it may not import Node built-ins or side-effecting modules.
import tseslint from 'typescript-eslint';
import { builtinModules } from 'node:module';

const nodeBuiltins = builtinModules.flatMap((m) => [m, `node:${m}`]);

export default tseslint.config(
  { ignores: ['node_modules/', '.data/', 'bench/results/', 'test-artifacts/'] },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    files: ['workflows/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: nodeBuiltins,
          patterns: [
            { group: ['pg', 'hono', '@aws-sdk/*', '@temporalio/client', '@temporalio/worker', '@temporalio/activity', 'pino', 'sharp'], message: 'Workflow code must stay deterministic: side effects live in activities/.' },
            { group: ['../src/*', '../activities/*', '!../activities/types', '!../src/temporal/names', '!../src/upload/types'], message: 'Workflows may import only types and the shared names module.' },
          ],
        },
      ],
    },
  },
);
