/**
 * The A2A variant: the Worker → Verifier (or → Supervisor) evidence handoff goes over A2A JSON-RPC HTTP instead of the
 * in-process channel. The receiving side is a real A2A agent (@a2a-js/sdk server on express) that acknowledges each
 * evidence message with a direct reply carrying the evidence exactly as it arrived; the Worker's side is the real
 * @a2a-js/sdk client. faultline's interceptor sees the call as an A2A `invoke_agent` CLIENT span (boundary I4 via the
 * x-faultline-boundary header), where the same communication faults apply as on the channel.
 *
 * Dev-only: @a2a-js/sdk and express are devDependencies.
 */
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { AgentExecutor } from '@a2a-js/sdk/server' with { 'resolution-mode': 'import' };
import type { AgentMessage } from '../../instrumentation/types';
import type { EvidenceTransport } from '../agents/workflow';

interface ExpressApp {
  use(path: string, ...handlers: unknown[]): void;
  listen(port: number, host: string, cb: () => void): Server;
}
const express = require('express') as (() => ExpressApp) & { json(): unknown };

export interface EvidenceInbox {
  /** Base URL (agent card at /.well-known/agent-card.json). */
  baseUrl: string;
  /** Evidence payloads as they arrived, in order. */
  received: unknown[];
  close(): Promise<void>;
}

type Json = Record<string, unknown>;

/** Start the receiving A2A agent on 127.0.0.1. */
export async function startEvidenceInbox(name = 'Verifier'): Promise<EvidenceInbox> {
  const sdk = await import('@a2a-js/sdk');
  const { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } = await import('@a2a-js/sdk/server');
  const { UserBuilder, agentCardHandler, jsonRpcHandler } = await import('@a2a-js/sdk/server/express');
  const received: unknown[] = [];
  const executor: AgentExecutor = {
    async execute(ctx, bus) {
      const data = ctx.userMessage.parts.find((p) => p.content?.$case === 'data');
      const payload: unknown = data?.content?.$case === 'data' ? data.content.value : undefined;
      received.push(payload);
      bus.publish(
        AgentEvent.message(
          sdk.Message.fromJSON({
            messageId: randomUUID(),
            contextId: ctx.contextId,
            role: 'ROLE_AGENT',
            parts: [{ data: { received: payload ?? null } }],
          }),
        ),
      );
      bus.finished();
    },
    async cancelTask() {
      // evidence delivery is immediate; nothing to cancel
    },
  };
  const app = express();
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const { port } = server.address() as AddressInfo;
  const baseUrl = `http://127.0.0.1:${port}`;
  const card = sdk.AgentCard.fromJSON({
    name,
    description: `${name} evidence inbox`,
    version: '1.0.0',
    supportedInterfaces: [{ url: `${baseUrl}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
    capabilities: { streaming: false, pushNotifications: false },
    defaultInputModes: ['application/json'],
    defaultOutputModes: ['application/json'],
    skills: [
      { id: 'evidence', name: 'receive evidence', description: 'Receives evidence handoffs', tags: ['evidence'] },
    ],
  });
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor);
  app.use(`/${sdk.AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: handler }));
  app.use('/a2a/jsonrpc', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  return {
    baseUrl,
    received,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * An evidence transport over A2A to `inbox`: resolves to the evidence as the receiver got it (none when the call
 * failed — a lost message looks like that to the sender).
 */
export async function a2aEvidenceTransport(
  inbox: { baseUrl: string },
  agentName = 'Verifier',
): Promise<EvidenceTransport> {
  const sdk = await import('@a2a-js/sdk');
  const { ClientFactory } = await import('@a2a-js/sdk/client');
  const client = await new ClientFactory().createFromUrl(inbox.baseUrl);
  return async (message): Promise<AgentMessage[]> => {
    try {
      const result = await client.sendMessage(
        {
          tenant: '',
          message: sdk.Message.fromJSON({
            messageId: message.id ?? randomUUID(),
            contextId: message.sessionId ?? '',
            role: 'ROLE_USER',
            parts: [{ data: message.payload }],
          }),
          configuration: undefined,
          metadata: undefined,
        },
        { serviceParameters: { 'x-faultline-agent': agentName, 'x-faultline-boundary': message.boundary ?? 'I4' } },
      );
      // A direct Message reply (not a Task) carries the receipt.
      const part = 'parts' in result ? result.parts.find((p) => p.content?.$case === 'data') : undefined;
      const got = (part?.content?.$case === 'data' ? (part.content.value as Json | undefined) : undefined)?.received;
      if (got === undefined || got === null) return [];
      return [{ ...message, id: message.id ?? randomUUID(), payload: got }];
    } catch {
      // The failed call is on its span; to the Worker the evidence simply did not get through.
      return [];
    }
  };
}
