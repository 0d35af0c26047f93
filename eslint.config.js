// Lint config. The rule that matters most: workflow code runs in Temporal's deterministic
// sandbox, so it may not import Node built-ins or modules with side effects. Then the layer
// direction: api -> arrivals -> http, sessions -> upload -> tokens -> db / storage; nothing
// below imports up (http is the HTTP kit the API and every arrival mode share). And src/
// never imports workflow code: the Temporal contract (src/temporal/definitions.ts, names.ts)
// sits beneath both, and the modules workflows import from it are held to the workflow rule.
import tseslint from 'typescript-eslint';
import { builtinModules } from 'node:module';

const nodeBuiltins = builtinModules.flatMap((m) => [m, `node:${m}`]);

const WORKFLOW_CODE = {
  group: ['**/workflows', '**/workflows/*', '**/workflows/**'],
  message: 'src/ never imports workflow code: take the contract from src/temporal/definitions.ts and names.ts.',
};

/** A rule that `files` import none of `above` (the layers that depend on them), nor workflow code; `extra`: a pattern more. */
const layer = (files, above, name, extra) => ({
  files,
  rules: {
    'no-restricted-imports': [
      'error',
      {
        patterns: [
          WORKFLOW_CODE,
          ...(extra ? [extra] : []),
          ...(above.length
            ? [
                {
                  group: above,
                  message: `${name} must not import the layers above it (api -> arrivals and wings -> http, sessions -> upload -> tokens -> db/storage).`,
                },
              ]
            : []),
        ],
      },
    ],
  },
});
/** src/temporal modules the workflow bundle imports: they run in the sandbox too. */
const WORKFLOW_PURE = [
  'src/temporal/definitions.ts',
  'src/temporal/names.ts',
  'src/temporal/trace-header.ts',
  'src/temporal/step-labels.ts',
  // Each wing's Temporal contract: its runs' types, IDs, inputs and patches.
  'src/*/contract.ts',
];
const API = ['**/api/*', '**/api/**'];
const ARRIVALS = ['**/arrivals/*', '**/arrivals/**'];
const SESSIONS = ['**/sessions/*', '**/sessions/**'];
const HTTP = ['**/http/*', '**/http/**'];
const UPLOAD = ['**/upload/*', '**/upload/**'];

export default tseslint.config(
  { ignores: ['node_modules/', '.data/', 'bench/results/', 'test-artifacts/', 'dist/'] },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
  layer(['src/**/*.ts'], [], 'src'),
  layer(['src/arrivals/**/*.ts'], API, 'The doors'),
  layer(['src/upload/**/*.ts'], [...API, ...ARRIVALS, ...SESSIONS, ...HTTP], 'The upload path'),
  layer(['src/http/**/*.ts'], [...API, ...ARRIVALS, ...SESSIONS], 'The HTTP kit'),
  layer(['src/tokens/**/*.ts'], [...API, ...ARRIVALS, ...SESSIONS, ...HTTP, ...UPLOAD], 'Upload tokens'),
  layer(['src/sessions/**/*.ts'], [...API, ...ARRIVALS, ...HTTP], 'The session core'),
  layer(['src/lifecycle/**/*.ts'], [...API, ...ARRIVALS, ...SESSIONS, ...HTTP], 'lifecycle'),
  // A wing holds its routes beside its service code: it uses the HTTP kit, never the API
  // that mounts it nor another door.
  // A door that lives in a wing uses what doors share (the intake, what a door is, the Uppy
  // endpoint credential); never the list of doors, nor another door's own code.
  layer(
    [
      'src/downloads/**/*.ts',
      'src/images/**/*.ts',
      'src/imports/**/*.ts',
      'src/console/**/*.ts',
      'src/record/**/*.ts',
      'src/reprocess/**/*.ts',
      'src/targets/**/*.ts',
      'src/quotas/**/*.ts',
    ],
    [...API, ...SESSIONS],
    'A wing',
    {
      regex: '(^|/)arrivals(/(?!(intake|door|uppy/endpoint)$).*)?$',
      message: 'A wing uses only what doors share: arrivals/intake, arrivals/door, arrivals/uppy/endpoint.',
    },
  ),
  layer(
    ['src/db/**/*.ts', 'src/storage/**/*.ts'],
    [...API, ...ARRIVALS, ...SESSIONS, ...HTTP, '**/upload/receive', '**/runtime'],
    'db and storage',
  ),
  layer(
    ['src/pipelines/**/*.ts', 'src/media/**/*.ts', 'src/scan/**/*.ts'],
    [...API, ...ARRIVALS, ...SESSIONS, ...HTTP, '**/upload/receive'],
    'pipelines, media and scan',
  ),
  layer(['activities/**/*.ts'], [...API, ...ARRIVALS, ...HTTP], 'Activities'),
  {
    files: ['workflows/**/*.ts', ...WORKFLOW_PURE],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: nodeBuiltins.map((name) => ({ name, message: 'Workflow code is deterministic: no Node built-ins (use activities).' })),
          patterns: [
            {
              group: [
                'pg',
                'hono',
                'hono/*',
                '@hono/*',
                '@aws-sdk/*',
                '@temporalio/client',
                '@temporalio/worker',
                '@temporalio/activity',
                'pino',
                'sharp',
                'undici',
              ],
              message: 'Workflow code is deterministic: side effects live in activities/.',
            },
            {
              group: [
                '**/src/db/**',
                '**/src/storage/**',
                '**/src/api/**',
                '**/src/devstack/**',
                '**/src/runtime',
                '**/src/config',
                '**/src/config/**',
              ],
              message: 'Workflows may import only pure modules (names, types, pure helpers).',
            },
          ],
        },
      ],
    },
  },
);
