/**
 * Loading a plan: from a JSON or YAML file, from an object, or from the environment (FAULTLINE_PLAN,
 * FAULTLINE_DISABLE, NODE_ENV=production). Every failure is a coded FaultlineInputError naming the file and the
 * rule at fault. `start()` gets its plan through the configuration (src/config.ts), which calls these once; the env
 * helpers here serve the public API.
 */
import { readFileSync } from 'node:fs';
import { extname } from 'node:path';
import { z } from 'zod';
import { logger } from '../diag';
import { isProduction, planFileFromEnv, processEnv, readSwitch } from '../env';
import { FaultlineInputError } from '../errors';
import { FaultPlan } from './schema';

const log = logger('plan');

/** Validate a plan object; `where` names its origin in the error. */
export function parsePlan(input: unknown, where = 'fault plan'): FaultPlan {
  const result = FaultPlan.safeParse(input);
  if (!result.success) {
    throw new FaultlineInputError('FAULTLINE_PLAN_INVALID', `invalid ${where}:\n${z.prettifyError(result.error)}`, {
      details: result.error.issues,
    });
  }
  return result.data;
}

/** Read and validate a plan file (.json, .yaml or .yml; other extensions are tried as YAML, a superset of JSON). */
export function loadPlan(path: string): FaultPlan {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new FaultlineInputError(
      code === 'ENOENT' ? 'FAULTLINE_PLAN_NOT_FOUND' : 'FAULTLINE_PLAN_INVALID',
      code === 'ENOENT' ? `fault plan not found: ${path}` : `cannot read fault plan ${path}: ${(err as Error).message}`,
      { cause: err },
    );
  }
  let data: unknown;
  try {
    data =
      extname(path).toLowerCase() === '.json'
        ? JSON.parse(text)
        : (require('yaml') as typeof import('yaml')).parse(text);
  } catch (err) {
    throw new FaultlineInputError(
      'FAULTLINE_PLAN_INVALID',
      `fault plan ${path} is not valid ${extname(path).toLowerCase() === '.json' ? 'JSON' : 'YAML'}: ${(err as Error).message}`,
      { cause: err },
    );
  }
  return parsePlan(data, `fault plan ${path}`);
}

/**
 * Refuse a plan under NODE_ENV=production (trimmed, any case) unless it says `allowProduction: true`. `production`
 * comes from the resolved configuration; the default reads NODE_ENV (for the API's own callers).
 */
export function checkProduction(plan: FaultPlan, where: string, production: boolean = isProduction()): void {
  if (production && !plan.allowProduction) {
    throw new FaultlineInputError(
      'FAULTLINE_PRODUCTION_REFUSED',
      `refusing to inject faults with NODE_ENV=production: ${where} does not say "allowProduction": true`,
    );
  }
}

/**
 * The plan the environment asks for: none without FAULTLINE_PLAN or with FAULTLINE_DISABLE=1. Throws on a bad plan
 * (start-up must fail loudly rather than run without the faults the user planned).
 */
export function planFromEnv(env: NodeJS.ProcessEnv = processEnv()): FaultPlan | undefined {
  if (injectionDisabled(env)) {
    if (env.FAULTLINE_PLAN) log.info(`FAULTLINE_DISABLE is set: ignoring FAULTLINE_PLAN=${env.FAULTLINE_PLAN}`);
    return undefined;
  }
  const path = planFileFromEnv(env);
  if (!path) return undefined;
  const plan = loadPlan(path);
  checkProduction(plan, `fault plan ${path}`, isProduction(env));
  return plan;
}

/** Whether injection is switched off process-wide (FAULTLINE_DISABLE: any truthy spelling; anything else throws). */
export function injectionDisabled(env: NodeJS.ProcessEnv = processEnv()): boolean {
  return readSwitch('FAULTLINE_DISABLE', env.FAULTLINE_DISABLE) === true;
}
