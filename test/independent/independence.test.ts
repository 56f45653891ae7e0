/**
 * The independent evaluation's fault model shares no string, threshold or mechanic with what it evaluates: every
 * string literal of 12 characters or more and every number of 100 or more in test/independent/faults.cjs and
 * model-server.cjs must be absent from src/catalog, src/diagnosers and detectors. The only exceptions are the wire
 * protocol's own vocabulary, listed below with the reason: HTTP statuses, header and content-type names, and the
 * error codes and finish reasons OpenAI documents — names a diagnoser may rightly know, not wordings or magnitudes.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const root = join(__dirname, '..', '..');
const MODEL = ['test/independent/faults.cjs', 'test/independent/model-server.cjs'];
const RULES = ['src/catalog', 'src/diagnosers', 'detectors'];

/** The documented wire vocabulary (OpenAI's API reference and error-codes guide, RFC 9110), allowed on both sides. */
const PROTOCOL = new Set([
  // HTTP statuses the fault model answers with (RFC 9110; OpenAI's error-codes guide).
  '200',
  '400',
  '404',
  '429',
  '500',
  '502',
  '503',
  '504',
  // milliseconds per second, a unit and not a threshold
  '1000',
  // header and media-type names
  'content-type',
  'application/json',
  'x-request-id',
  'retry-after-ms',
  // OpenAI's documented object names, error types, error codes and finish reasons
  'chat.completion',
  'server_error',
  'invalid_request_error',
  'rate_limit_exceeded',
  'context_length_exceeded',
  'content_filter',
  // the loopback address the server listens on
  'http://127.0.0.1:',
]);

function literals(file: string): Array<{ text: string; kind: 'string' | 'number' }> {
  const sf = ts.createSourceFile(file, readFileSync(join(root, file), 'utf8'), ts.ScriptTarget.Latest, true);
  const out: Array<{ text: string; kind: 'string' | 'number' }> = [];
  const visit = (n: ts.Node): void => {
    if ((ts.isStringLiteral(n) || ts.isNoSubstitutionTemplateLiteral(n)) && n.text.length >= 12)
      out.push({ text: n.text, kind: 'string' });
    if (ts.isTemplateExpression(n))
      for (const part of [n.head, ...n.templateSpans.map((s) => s.literal)])
        if (part.text.length >= 12) out.push({ text: part.text, kind: 'string' });
    if (ts.isRegularExpressionLiteral(n) && n.text.length >= 12) out.push({ text: n.text, kind: 'string' });
    if (ts.isNumericLiteral(n) && Number(n.text) >= 100) out.push({ text: n.text, kind: 'number' });
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return out;
}

function filesUnder(dir: string): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? filesUnder(join(dir, e.name)) : [join(dir, e.name)],
  );
}

describe('the independent fault model', () => {
  const rules = RULES.flatMap(filesUnder).map((f) => ({ file: f, text: readFileSync(join(root, f), 'utf8') }));
  const found = MODEL.flatMap(literals);

  it('has literals to check (the extraction works)', () => {
    expect(found.filter((l) => l.kind === 'string').length).toBeGreaterThan(20);
    expect(found.filter((l) => l.kind === 'number').length).toBeGreaterThan(3);
    expect(rules.length).toBeGreaterThan(20);
  });

  it('shares no string of 12+ characters and no number of 100+ with src/catalog, src/diagnosers, detectors', () => {
    const shared: string[] = [];
    for (const { text, kind } of found) {
      if (PROTOCOL.has(text)) continue;
      const escaped = text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      const hit = rules.find((r) =>
        kind === 'string' ? r.text.includes(text) : new RegExp(`(?<![\\w.])${escaped}(?![\\w.])`).test(r.text),
      );
      if (hit) shared.push(`${kind} ${JSON.stringify(text)} also in ${hit.file}`);
    }
    expect(shared).toEqual([]);
  });
});
