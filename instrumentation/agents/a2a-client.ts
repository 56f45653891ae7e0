/**
 * For applications using the @a2a-js/sdk client: a CallInterceptor that names the remote agent from the Agent Card
 * the client already holds, so its calls get `invoke_agent {card name}` spans without a per-call header. (The card
 * is fetched by the client before any call and is not visible to the HTTP layer when the call is made.)
 *
 *   const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
 *     clientConfig: { interceptors: [a2aAgentCardInterceptor()] },
 *   }));
 *
 * It also propagates the caller's trace context (`traceparent`, through the globally registered propagator), so the
 * remote agent's receive span (see `instrumentA2aRequestHandler`) joins the caller's trace, in this process or another.
 *
 * Typed structurally: faultline does not depend on @a2a-js/sdk.
 */
import { context, propagation } from '@opentelemetry/api';
import { AGENT_HEADER, BOUNDARY_HEADER } from './a2a';

interface CallArgs {
  readonly agentCard?: { name?: string };
  options?: { serviceParameters?: Record<string, string> };
}

export interface A2aAgentCardInterceptorOptions {
  /** Boundary label for every message this client sends (I1..I4 or a user label); a per-call header wins. */
  boundary?: string;
}

export function a2aAgentCardInterceptor(options: A2aAgentCardInterceptorOptions = {}): {
  before(args: CallArgs): Promise<void>;
  after(args: unknown): Promise<void>;
} {
  return {
    async before(args) {
      const name = args.agentCard?.name;
      const given = args.options?.serviceParameters ?? {};
      const added: Record<string, string> = {};
      if (typeof name === 'string' && name !== '' && !hasKey(given, AGENT_HEADER)) added[AGENT_HEADER] = name;
      if (options.boundary !== undefined && !hasKey(given, BOUNDARY_HEADER)) added[BOUNDARY_HEADER] = options.boundary;
      if (!hasKey(given, 'traceparent')) {
        const carrier: Record<string, string> = {};
        propagation.inject(context.active(), carrier);
        for (const [k, v] of Object.entries(carrier)) if (!hasKey(given, k)) added[k] = v;
      }
      if (Object.keys(added).length === 0) return;
      args.options = { ...args.options, serviceParameters: { ...given, ...added } };
    },
    async after() {
      // nothing to do after the call
    },
  };
}

function hasKey(params: Record<string, string>, name: string): boolean {
  return Object.keys(params).some((k) => k.toLowerCase() === name);
}
