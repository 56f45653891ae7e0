/**
 * Transport faults: what real clients really see, as opposed to AgentChaos's 200-OK bodies carrying error text.
 * HTTP errors with provider-shaped error bodies, connection reset / refused, a hang until the client gives up, and a
 * slow first byte. They act before the request leaves: a synthetic response never reaches the network.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { z } from 'zod';
import { timerMs } from '../duration';
import type { FaultType } from '../taxonomy';
import { STRATEGIES } from './agentchaos/experiments';
import type { TransportEffect, TransportFault } from './types';

const retryAfter = z.number().min(0).max(3600).default(1).meta({ description: 'Retry-After header value, in seconds' });
const httpParams = z.strictObject({
  retryAfterS: retryAfter,
});

interface Shape {
  status: number;
  openai: { message: string; type: string; code: string | null };
  anthropic: { type: string; message: string };
  /** Google's RPC status (the Gemini API and Vertex answer `{"error": {code, message, status}}`). */
  gemini: { message: string; status: string };
  /** Ollama answers `{"error": "…"}`. */
  ollama: string;
  /**
   * Amazon Bedrock names the error in the `x-amzn-errortype` header and answers `{"message": "…"}` (the runtime API
   * reference's errors: ThrottlingException 429, InternalServerException 500, ServiceUnavailableException 503; a 502 or
   * 529 is Bedrock's ServiceUnavailableException, the error it has for an unavailable model).
   */
  bedrock: { type: string; message: string };
}

const SHAPES: Record<string, Shape> = {
  http_500: {
    status: 500,
    openai: {
      message: 'The server had an error while processing your request. Sorry about that!',
      type: 'server_error',
      code: null,
    },
    anthropic: { type: 'api_error', message: 'Internal server error' },
    gemini: {
      message:
        'An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting',
      status: 'INTERNAL',
    },
    ollama: 'an error was encountered while running the model',
    bedrock: { type: 'InternalServerException', message: 'An internal server error occurred. Retry your request.' },
  },
  http_502: {
    status: 502,
    openai: { message: 'Bad gateway.', type: 'server_error', code: null },
    anthropic: { type: 'api_error', message: 'Bad gateway' },
    gemini: { message: 'Bad Gateway', status: 'UNAVAILABLE' },
    ollama: 'bad gateway',
    bedrock: {
      type: 'ServiceUnavailableException',
      message: "The service isn't currently available. Try again later.",
    },
  },
  http_503: {
    status: 503,
    openai: {
      message: 'The engine is currently overloaded, please try again later.',
      type: 'server_error',
      code: null,
    },
    anthropic: { type: 'api_error', message: 'Service unavailable' },
    gemini: { message: 'The model is overloaded. Please try again later.', status: 'UNAVAILABLE' },
    ollama: 'server busy, please try again.  maximum pending requests exceeded',
    bedrock: {
      type: 'ServiceUnavailableException',
      message: "The service isn't currently available. Try again later.",
    },
  },
  http_529: {
    status: 529,
    openai: { message: 'The server is overloaded, please try again later.', type: 'server_error', code: 'overloaded' },
    anthropic: { type: 'overloaded_error', message: 'Overloaded' },
    gemini: { message: 'The model is overloaded. Please try again later.', status: 'UNAVAILABLE' },
    ollama: 'server overloaded',
    bedrock: {
      type: 'ServiceUnavailableException',
      message: "The service isn't currently available. Try again later.",
    },
  },
  http_429: {
    status: 429,
    openai: {
      message: 'Rate limit reached for requests. Please try again in 1s.',
      type: 'requests',
      code: 'rate_limit_exceeded',
    },
    anthropic: {
      type: 'rate_limit_error',
      message: 'Number of request tokens has exceeded your per-minute rate limit',
    },
    gemini: { message: 'Resource has been exhausted (e.g. check quota).', status: 'RESOURCE_EXHAUSTED' },
    ollama: 'too many requests',
    bedrock: {
      type: 'ThrottlingException',
      message:
        'Your request was denied due to exceeding the account quotas for Amazon Bedrock. Wait before trying again.',
    },
  },
};

/** The error body a provider family really sends for this status (`provider`: openai, anthropic, gemini, ollama, bedrock). */
export function providerErrorBody(name: string, provider: string): string {
  const s = SHAPES[name];
  if (provider === 'bedrock') return JSON.stringify({ message: s.bedrock.message });
  if (provider === 'anthropic') return JSON.stringify({ type: 'error', error: s.anthropic });
  if (provider === 'gemini')
    return JSON.stringify({ error: { code: s.status, message: s.gemini.message, status: s.gemini.status } });
  if (provider === 'ollama') return JSON.stringify({ error: s.ollama });
  return JSON.stringify({
    error: { message: s.openai.message, type: s.openai.type, param: null, code: s.openai.code },
  });
}

function httpFault(name: string): TransportFault {
  const s = SHAPES[name];
  return {
    name,
    base: name,
    type: 'error',
    category: 'crash',
    mode: 'transport',
    target: 'transport',
    strategy: STRATEGIES.single,
    fixedStrategy: false,
    description: `HTTP ${s.status} with the provider's error body${s.status === 429 || s.status === 529 || s.status === 503 ? ' and Retry-After' : ''}`,
    params: httpParams as unknown as z.ZodType<Record<string, unknown>>,
    effect(params, provider): TransportEffect {
      const headers: Record<string, string> = {
        'content-type': provider === 'gemini' ? 'application/json; charset=UTF-8' : 'application/json',
      };
      if (s.status === 429 || s.status === 529 || s.status === 503)
        headers['retry-after'] = String(params.retryAfterS ?? 1);
      // A request id like the provider's own: a constant would tell an injected error from a real one.
      // Gemini and Ollama send none.
      const requestId = `req_${randomBytes(16).toString('hex')}`;
      if (provider === 'anthropic') headers['request-id'] = requestId;
      else if (provider === 'openai') headers['x-request-id'] = requestId;
      else if (provider === 'bedrock') {
        // What the AWS SDK reads the exception's type from; its request id is a UUID.
        headers['x-amzn-errortype'] = `${s.bedrock.type}:http://internal.amazon.com/coral/com.amazon.bedrock/`;
        headers['x-amzn-requestid'] = randomUUID();
      }
      return { kind: 'respond', status: s.status, headers, body: providerErrorBody(name, provider) };
    },
  };
}

function plain(
  name: string,
  type: FaultType,
  description: string,
  params: z.ZodType,
  effect: (p: Record<string, unknown>) => TransportEffect,
): TransportFault {
  return {
    name,
    base: name,
    type,
    category: type === 'delay' ? 'omission' : 'crash',
    mode: 'transport',
    target: 'transport',
    strategy: STRATEGIES.single,
    fixedStrategy: false,
    description,
    params: params as unknown as z.ZodType<Record<string, unknown>>,
    effect,
  };
}

export function transportFaults(): TransportFault[] {
  return [
    ...Object.keys(SHAPES).map(httpFault),
    plain(
      'conn_reset',
      'error',
      'the connection is reset before any response (ECONNRESET)',
      z.strictObject({
        afterMs: timerMs(z.number().int().min(0)).default(0).meta({ description: 'wait before the reset, in ms' }),
      }),
      (p) => ({ kind: 'error', code: 'ECONNRESET', afterMs: Number(p.afterMs ?? 0) }),
    ),
    plain(
      'conn_refused',
      'error',
      'the connection is refused (ECONNREFUSED); the request never leaves',
      z.strictObject({}),
      () => ({
        kind: 'error',
        code: 'ECONNREFUSED',
        afterMs: 0,
      }),
    ),
    plain(
      'timeout_hang',
      'timeout',
      'no response: held until the client gives up, or reset after stallMs',
      z.strictObject({
        stallMs: timerMs(z.number().int().min(0))
          .meta({
            description: 'reset the connection after this long instead of holding until the client aborts, in ms',
          })
          .optional(),
      }),
      (p) => ({ kind: 'hang', stallMs: typeof p.stallMs === 'number' ? p.stallMs : undefined }),
    ),
    plain(
      'slow_first_byte',
      'delay',
      'the request is held delayMs before it is sent (slow time to first byte); the response is untouched',
      z.strictObject({
        delayMs: timerMs(z.number().int().min(0)).default(3000).meta({ description: 'added latency, in ms' }),
      }),
      (p) => ({ kind: 'delay', delayMs: Number(p.delayMs ?? 3000) }),
    ),
  ];
}
