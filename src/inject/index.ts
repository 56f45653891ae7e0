/**
 * faultline's fault injection, as one injector: the span processor that selects, the HTTP step and the channel step
 * that apply, and the trigger report. `createInjector(plan)` for one plan for every task, or
 * `createInjector(taskId => plan)` for a plan per task (campaigns).
 */
import type { DeliverStep, Interceptor } from '../../instrumentation/types';
import { captureContentFromEnv, processEnv } from '../env';
import { checkProduction, injectionDisabled, parsePlan, planFromEnv } from '../plan/load';
import { FaultInjectionSpanProcessor } from '../plan/processor';
import type { FaultPlan, FaultPlanInput } from '../plan/schema';
import { createChannelStep } from './channel-step';
import { FaultEngine, type PlanSource } from './engine';
import { createFaultStep } from './http-step';
import type { TriggerReport } from './verify';

export type { PlanSource } from './engine';
export type { RuleTrigger, TaskTrigger, TriggerReport } from './verify';
export { triggerReportFromSpans, formatTriggerReport } from './verify';
export { FaultInjectionSpanProcessor, faultDecisionFor, decideFor } from '../plan/processor';
export { FaultEngine } from './engine';
export { createFaultStep } from './http-step';
/** The start-up message for a plan's rules that can meet a wire format where their fault has no meaning. */
export { planGapsMessage } from '../catalog/formats';
export { createChannelStep } from './channel-step';

export interface InjectorOptions {
  /** Record original/delivered bodies on faultline.fault.injected events. Default:
   * OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT. */
  captureMessageContent?: boolean;
  /** Tasks whose state is kept (least recently used dropped). Default 1000. */
  maxTasks?: number;
  /** Injection switched off (FAULTLINE_DISABLE): the injector is inert. Default: read from the environment. */
  disabled?: boolean;
  /** NODE_ENV is production: a plan without `allowProduction` is refused. Default: read from the environment. */
  production?: boolean;
}

export interface Injector {
  /** Register in the tracer provider (register does): selects rules at span start. */
  readonly spanProcessor: FaultInjectionSpanProcessor;
  /** The undici interceptor for `steps` (after the guard step). */
  readonly httpStep: Interceptor;
  /** The DeliverStep for `channelSteps` (after the guard step). */
  readonly channelStep: DeliverStep;
  /** Per task, per rule: matched calls, fires, no-ops, triggered. */
  triggerReport(taskId?: string): TriggerReport;
  /** False when FAULTLINE_DISABLE=1 made this injector inert. */
  readonly enabled: boolean;
}

/**
 * Create an injector. A plan object is validated (a FaultlineInputError names the rule and the problem) and refused
 * under NODE_ENV=production unless it says `allowProduction: true`. With FAULTLINE_DISABLE=1 the injector is inert.
 */
export function createInjector(
  plan: FaultPlan | FaultPlanInput | ((taskId: string) => FaultPlan | FaultPlanInput | undefined),
  options: InjectorOptions = {},
): Injector {
  // start() passes both from its resolved configuration; API callers get them from the environment.
  const disabled = options.disabled ?? injectionDisabled();
  let source: PlanSource;
  if (typeof plan === 'function') {
    const cache = new Map<FaultPlan | FaultPlanInput, FaultPlan>();
    source = (taskId: string) => {
      if (disabled) return undefined;
      const p = plan(taskId);
      if (p === undefined) return undefined;
      let parsed = cache.get(p);
      if (!parsed) {
        parsed = parsePlan(p, `fault plan for task ${taskId}`);
        cache.set(p, parsed);
      }
      return parsed;
    };
  } else {
    const parsed = parsePlan(plan);
    if (!disabled) checkProduction(parsed, 'the fault plan', options.production);
    source = disabled ? () => undefined : parsed;
  }
  const engine = new FaultEngine(source, { maxTasks: options.maxTasks });
  const capture = options.captureMessageContent ?? captureContentFromEnv() ?? false;
  return {
    spanProcessor: new FaultInjectionSpanProcessor(engine),
    httpStep: createFaultStep(engine, { captureContent: () => capture }),
    channelStep: createChannelStep(engine, { captureContent: () => capture }),
    triggerReport: (taskId?: string) => engine.ledger.report(taskId),
    enabled: !disabled,
  };
}

/**
 * The injector the environment asks for (what `register` wires): FAULTLINE_PLAN=path, unless FAULTLINE_DISABLE=1.
 * Undefined without a plan. Throws a FaultlineInputError naming the file and rule for a bad plan, and refuses a plan
 * under NODE_ENV=production unless it says `allowProduction: true`.
 */
export function injectorFromEnv(
  env: NodeJS.ProcessEnv = processEnv(),
  options: InjectorOptions = {},
): Injector | undefined {
  const plan = planFromEnv(env);
  return plan === undefined ? undefined : createInjector(plan, options);
}
