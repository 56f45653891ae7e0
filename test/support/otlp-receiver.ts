/** A tiny OTLP/HTTP receiver on loopback: accepts POST /v1/traces and keeps the bodies. */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface OtlpRequest {
  path: string;
  contentType: string | undefined;
  body: Buffer;
}

export async function startOtlpReceiver(): Promise<{ url: string; requests: OtlpRequest[]; close(): Promise<void> }> {
  const requests: OtlpRequest[] = [];
  const server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      requests.push({ path: req.url ?? '', contentType: req.headers['content-type'], body: Buffer.concat(parts) });
      const json = req.headers['content-type']?.includes('json');
      res.writeHead(req.method === 'POST' && req.url === '/v1/traces' ? 200 : 404, {
        'content-type': json ? 'application/json' : 'application/x-protobuf',
      });
      res.end(json ? '{}' : undefined);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** Spans of an OTLP/JSON ExportTraceServiceRequest, flattened. */
export function otlpJsonSpans(doc: unknown): Array<{
  name: string;
  kind: number;
  spanId: string;
  parentSpanId?: string;
  attributes: Record<string, unknown>;
  scope: string;
}> {
  const out: Array<{
    name: string;
    kind: number;
    spanId: string;
    parentSpanId?: string;
    attributes: Record<string, unknown>;
    scope: string;
  }> = [];
  const d = doc as {
    resourceSpans?: Array<{
      scopeSpans?: Array<{ scope?: { name?: string }; spans?: Array<Record<string, unknown>> }>;
    }>;
  };
  for (const rs of d.resourceSpans ?? []) {
    for (const ss of rs.scopeSpans ?? []) {
      for (const s of ss.spans ?? []) {
        const attributes: Record<string, unknown> = {};
        for (const kv of (s.attributes as Array<{ key: string; value: Record<string, unknown> }>) ?? []) {
          const v = kv.value;
          attributes[kv.key] = v.stringValue ?? v.intValue ?? v.doubleValue ?? v.boolValue ?? v.arrayValue;
        }
        out.push({
          name: s.name as string,
          kind: s.kind as number,
          spanId: s.spanId as string,
          ...(s.parentSpanId ? { parentSpanId: s.parentSpanId as string } : {}),
          attributes,
          scope: ss.scope?.name ?? '',
        });
      }
    }
  }
  return out;
}
