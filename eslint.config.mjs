import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**', 'bench/out/**', '**/*.d.ts'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { process: 'readonly', console: 'readonly', Buffer: 'readonly', URL: 'readonly' } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-require-imports': 'off',
    },
  },
  {
    // The environment is read in one place (src/env.ts, and src/config.ts resolving the configuration from it): every
    // other module takes an `env` from its caller or `processEnv()` (docs/architecture.md). Example apps read theirs.
    files: ['src/**/*.ts', 'src/**/*.mts', 'instrumentation/**/*.ts', 'detectors/**/*.ts'],
    ignores: ['src/env.ts', 'src/config.ts'],
    rules: {
      'no-restricted-properties': [
        'error',
        {
          object: 'process',
          property: 'env',
          message: 'read the environment through src/env.ts (processEnv() or the reader that names the variable)',
        },
      ],
    },
  },
  {
    // What is computed once per object faultline reads (a trace, its view, a span, an observation) is kept with
    // ObjectMemo (src/memo.ts), not in a WeakMap: V8 keeps an old WeakMap's values through young-generation
    // collections after their keys died, which promoted every diagnosed trace (BENCHMARKS.md, "Per-trace caches on
    // the object"). A WeakMap keyed by an application's objects, which are not written to, says so where it is made.
    files: ['src/traces/**/*.ts', 'src/diagnosers/**/*.ts', 'detectors/**/*.ts'],
    ignores: ['detectors/guards/**'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: "NewExpression[callee.name='WeakMap']",
          message:
            'keep per-object values with ObjectMemo (src/memo.ts): an old WeakMap keeps its values through scavenges',
        },
      ],
    },
  },
  {
    files: ['**/*.js', '**/*.mjs', '**/*.cjs'],
    languageOptions: {
      globals: {
        require: 'readonly',
        module: 'writable',
        __dirname: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly',
        performance: 'readonly',
        fetch: 'readonly',
      },
    },
  },
);
