// Lint config. The rule that matters most: workflow code runs in Temporal's deterministic
// sandbox, so it may not import Node built-ins or modules with side effects.
import tseslint from 'typescript-eslint';
import { builtinModules } from 'node:module';

const nodeBuiltins = builtinModules.flatMap((m) => [m, `node:${m}`]);

export default tseslint.config(
  { ignores: ['node_modules/', '.data/', 'bench/results/', 'test-artifacts/', 'dist/'] },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
  {
    files: ['workflows/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: nodeBuiltins.map((name) => ({ name, message: 'Workflow code is deterministic: no Node built-ins (use activities).' })),
          patterns: [
            {
              group: ['pg', 'hono', 'hono/*', '@hono/*', '@aws-sdk/*', '@temporalio/client', '@temporalio/worker', '@temporalio/activity', 'pino', 'sharp', 'undici'],
              message: 'Workflow code is deterministic: side effects live in activities/.',
            },
            {
              group: ['**/src/db/**', '**/src/storage/**', '**/src/api/**', '**/src/devstack/**', '**/src/runtime', '**/src/config'],
              message: 'Workflows may import only pure modules (names, types, pure helpers).',
            },
          ],
        },
      ],
    },
  },
);
