/**
 * The runtime's optional parts, each loaded the first time the configuration asks for it: a process without a plan,
 * guards or a configuration file never loads zod or yaml (about 170 modules), one that never runs a campaign never
 * loads the example agents and the openai SDK. `start()`, `resolveConfig()` and the public API reach them only here.
 *
 * Under vitest this module is replaced by test/support/eager-parts.ts (vitest.config.mts): vitest cannot follow a
 * `require()` into TypeScript sources. The lazy loading itself is tested on the built package, in child processes.
 */
export interface RuntimeParts {
  configFile(): typeof import('./config-schema');
  plans(): typeof import('./plan/load');
  guardConfig(): typeof import('../detectors/guards/config');
  inject(): typeof import('./inject');
  guards(): typeof import('../detectors/guards');
  online(): typeof import('../detectors/online');
  announce(): typeof import('./announce');
  campaign(): typeof import('./campaign/runner');
  mockModel(): typeof import('./mock-model/server');
}

export const parts: RuntimeParts = {
  configFile: () => require('./config-schema'),
  plans: () => require('./plan/load'),
  guardConfig: () => require('../detectors/guards/config'),
  inject: () => require('./inject'),
  guards: () => require('../detectors/guards'),
  online: () => require('../detectors/online'),
  announce: () => require('./announce'),
  campaign: () => require('./campaign/runner'),
  mockModel: () => require('./mock-model/server'),
};
