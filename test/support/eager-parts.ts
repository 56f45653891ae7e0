/**
 * src/parts.ts for vitest (vitest.config.mts swaps it in): the same parts, imported statically, so that tests running
 * the TypeScript sources get the very modules they import themselves. vitest cannot follow the `require()` calls
 * src/parts.ts makes in the built package.
 */
import * as guardConfig from '../../detectors/guards/config';
import * as guards from '../../detectors/guards';
import * as online from '../../detectors/online';
import * as announce from '../../src/announce';
import * as campaign from '../../src/campaign/runner';
import * as configFile from '../../src/config-schema';
import * as inject from '../../src/inject';
import * as mockModel from '../../src/mock-model/server';
import type { RuntimeParts } from '../../src/parts';
import * as plans from '../../src/plan/load';

export const parts: RuntimeParts = {
  configFile: () => configFile,
  plans: () => plans,
  guardConfig: () => guardConfig,
  inject: () => inject,
  guards: () => guards,
  online: () => online,
  announce: () => announce,
  campaign: () => campaign,
  mockModel: () => mockModel,
};
