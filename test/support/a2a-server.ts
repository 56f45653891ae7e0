/**
 * A real A2A agent (@a2a-js/sdk DefaultRequestHandler + the express JSON-RPC handler, v0.3 compatibility on, and the
 * REST handler) on 127.0.0.1:0, for tests that drive it with the real A2A clients. It records the raw body and
 * headers of every JSON request it receives.
 *
 * The agent ("Scorer", a crewAI coworker) answers:
 *  - text containing "quick": a direct Message reply (no task);
 *  - anything else: a task, submitted → working → artifact (the reply) → completed.
 */
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { AgentCard, Part } from '@a2a-js/sdk' with { 'resolution-mode': 'import' };
import type { AgentExecutor } from '@a2a-js/sdk/server' with { 'resolution-mode': 'import' };

/** The part of express these tests use (the package ships no types and @types/express is not installed). */
interface ExpressApp {
  use(path: string, ...handlers: unknown[]): void;
  listen(port: number, host: string, cb: () => void): Server;
}
interface Express {
  (): ExpressApp;
  json(options: {
    verify: (req: { headers: Record<string, string | string[] | undefined> }, res: unknown, buf: Buffer) => void;
  }): unknown;
}
const express = require('express') as Express;

export interface A2aRequestSeen {
  rawBody: string;
  headers: Record<string, string | string[] | undefined>;
}

export interface A2aTestServer {
  /** Base URL (the agent card is at /.well-known/agent-card.json). */
  baseUrl: string;
  /** The JSON-RPC endpoint. */
  endpoint: string;
  /** The HTTP+JSON (REST) endpoint. */
  restEndpoint: string;
  card: AgentCard;
  requests: A2aRequestSeen[];
  close(): Promise<void>;
}

export const AGENT_NAME = 'Scorer';

function textPart(text: string): Part {
  return { content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' };
}

type Sdk = typeof import('@a2a-js/sdk', { with: { 'resolution-mode': 'import' } });
type ServerSdk = typeof import('@a2a-js/sdk/server', { with: { 'resolution-mode': 'import' } });

function scorer({ Message, TaskState }: Sdk, { AgentEvent }: ServerSdk): AgentExecutor {
  return {
    async execute(ctx, bus) {
      const input = ctx.userMessage.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join(' ');
      const reply = `Score: 4 (very good). You asked: ${input.slice(0, 60)}`;
      if (input.includes('quick')) {
        bus.publish(
          AgentEvent.message(
            Message.fromJSON({
              messageId: randomUUID(),
              contextId: ctx.contextId,
              role: 'ROLE_AGENT',
              parts: [{ text: reply }],
            }),
          ),
        );
        bus.finished();
        return;
      }
      const { taskId, contextId } = ctx;
      if (!ctx.task) {
        bus.publish(
          AgentEvent.task({
            id: taskId,
            contextId,
            status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: new Date().toISOString() },
            artifacts: [],
            history: [ctx.userMessage],
            metadata: undefined,
          }),
        );
      }
      bus.publish(
        AgentEvent.statusUpdate({
          taskId,
          contextId,
          status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: new Date().toISOString() },
          metadata: undefined,
        }),
      );
      bus.publish(
        AgentEvent.artifactUpdate({
          taskId,
          contextId,
          artifact: {
            artifactId: 'score',
            name: 'score',
            description: '',
            parts: [textPart(reply)],
            metadata: undefined,
            extensions: [],
          },
          append: false,
          lastChunk: true,
          metadata: undefined,
        }),
      );
      bus.publish(
        AgentEvent.statusUpdate({
          taskId,
          contextId,
          status: { state: TaskState.TASK_STATE_COMPLETED, message: undefined, timestamp: new Date().toISOString() },
          metadata: undefined,
        }),
      );
      bus.finished();
    },
    async cancelTask() {
      // not used
    },
  };
}

export async function startA2aServer(): Promise<A2aTestServer> {
  const sdk = await import('@a2a-js/sdk');
  const serverSdk = await import('@a2a-js/sdk/server');
  const { UserBuilder, agentCardHandler, jsonRpcHandler, restHandler } = await import('@a2a-js/sdk/server/express');
  const { AGENT_CARD_PATH, AgentCard } = sdk;
  const { DefaultRequestHandler, InMemoryTaskStore } = serverSdk;
  const app = express();
  const requests: A2aRequestSeen[] = [];
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const { port } = server.address() as AddressInfo;
  const baseUrl = `http://127.0.0.1:${port}`;
  const endpoint = `${baseUrl}/a2a/jsonrpc`;
  const restEndpoint = `${baseUrl}/a2a/rest`;
  const card = AgentCard.fromJSON({
    name: AGENT_NAME,
    description: 'Scores article titles from 1 to 5',
    version: '1.0.0',
    // v1.0 for the ClientFactory client; v0.3 declared too, as the compat layer requires for v0.3 clients.
    supportedInterfaces: [
      { url: endpoint, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
      { url: endpoint, protocolBinding: 'JSONRPC', protocolVersion: '0.3' },
      { url: restEndpoint, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' },
    ],
    capabilities: { streaming: true, pushNotifications: false },
    defaultInputModes: ['text'],
    defaultOutputModes: ['text'],
    skills: [{ id: 'score', name: 'score', description: 'Score a title', tags: ['scoring'] }],
  });
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), scorer(sdk, serverSdk));

  // Record each request exactly as it arrived (the SDK's own body parser then sees it already parsed).
  app.use(
    '/a2a',
    express.json({
      verify: (req, _res, buf) => {
        requests.push({ rawBody: buf.toString('utf8'), headers: { ...req.headers } });
      },
    }),
  );
  app.use(`/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: handler, legacyCompat: { enabled: true } }));
  app.use(
    '/a2a/jsonrpc',
    jsonRpcHandler({
      requestHandler: handler,
      userBuilder: UserBuilder.noAuthentication,
      legacyCompat: { enabled: true },
    }),
  );
  app.use('/a2a/rest', restHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  return {
    baseUrl,
    endpoint,
    restEndpoint,
    card,
    requests,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
