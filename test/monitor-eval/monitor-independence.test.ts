/**
 * The evaluation set must not be written from the monitors (issue 28): no error string, phrase or threshold of
 * detectors/monitors/*.ts may appear in the generator. Shared on purpose, and listed here with their source, are
 * only the providers' own documented wording (a reader of real traces must look for what providers write) and
 * documented model windows; identifiers (attribute keys, ARCF / MAST vocabulary) are names, not evidence.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(__dirname, '..', '..');
const MONITORS = join(ROOT, 'detectors', 'monitors');

/** Provider wording and facts both sides may carry, each from the provider's documentation or SDK. */
const DOCUMENTED = [
  /maximum context length/i, // OpenAI / Azure OpenAI / vLLM 400 body ("This model's maximum context length is N tokens")
  /prompt is too long/i, // Anthropic invalid_request_error
  /input token count/i, // Gemini INVALID_ARGUMENT
  /exceeds the maximum number of tokens/i, // Gemini
  /input is too long/i, // Bedrock ValidationException
  /request timed out/i, // openai / anthropic SDK APIConnectionTimeoutError
  /aborted due to timeout/i, // Node AbortSignal.timeout TimeoutError
  /reduce the length of the messages/i, // OpenAI / vLLM
  /resulted in/i, // OpenAI / vLLM: "However, your messages resulted in N tokens"
  /exceeds the maximum/i, // Gemini, as a regex reads it apart from "number of tokens"
  /requested model/i, // Bedrock ValidationException: "Input is too long for requested model"
];
const WINDOWS = new Set([4096, 8192, 16384, 32768, 65536, 128000, 131072, 200000, 1000000, 1047576, 1048576, 2097152]);

/** String literals (quotes, template parts), regex bodies' word runs, and numeric literals of a source file. */
function literals(src: string): { strings: string[]; numbers: number[] } {
  const code = src.replace(/\/\*[\s\S]*?\*\//g, ' ').replace(/(^|[^:'"`\\])\/\/[^\n]*/g, '$1');
  const strings: string[] = [];
  for (const m of code.matchAll(/'((?:[^'\\\n]|\\.)*)'|"((?:[^"\\\n]|\\.)*)"|`((?:[^`\\]|\\.)*)`/g))
    strings.push(...(m[1] ?? m[2] ?? m[3] ?? '').split(/\$\{[^}]*\}/));
  for (const m of code.matchAll(/(?<=[=(,:!&|?]\s*)\/((?:[^/\\\n]|\\.)+)\/[gimsuy]*/g))
    strings.push(...m[1]!.replace(/\\[sbdw]/g, ' ').split(/[^A-Za-z' ]+/));
  const numbers = [
    ...code
      .replace(/'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*"|`(?:[^`\\]|\\.)*`/g, ' ')
      .matchAll(/(?<![\w.])(\d[\d_]*(?:\.\d+)?(?:e\d+)?)(?![\w.])/g),
  ].map((m) => Number(m[1]!.replace(/_/g, '')));
  return { strings: strings.map((s) => s.trim()).filter(Boolean), numbers };
}

/** A phrase worth comparing: words with a space, ten characters or more, not a documented provider phrase. */
const phrase = (s: string) => s.length >= 10 && /[a-z]{3,} [a-z]{2,}/i.test(s) && !DOCUMENTED.some((d) => d.test(s));
/** HTTP statuses (RFC 9110) both sides read off error spans. */
const HTTP = new Set([400, 404, 408, 413, 429, 500, 502, 503, 504]);
/** A number that could be a threshold: not a small count, a power of ten, a documented window, an HTTP status, a year or a port. */
const threshold = (n: number) =>
  !(
    Number.isInteger(n) &&
    (n <= 16 || /^10*$/.test(String(n)) || WINDOWS.has(n) || HTTP.has(n) || (n >= 1990 && n <= 2100) || n === 443)
  );

export function shared(generator: string, monitors: string[]): { phrases: string[]; numbers: number[] } {
  const g = literals(generator);
  const gText = g.strings.join('\n').toLowerCase();
  const gNumbers = new Set(g.numbers);
  const phrases = new Set<string>();
  const numbers = new Set<number>();
  for (const src of monitors) {
    const m = literals(src);
    for (const s of m.strings.filter(phrase)) if (gText.includes(s.toLowerCase())) phrases.add(s);
    for (const s of g.strings.filter(phrase))
      if (m.strings.some((x) => x.toLowerCase().includes(s.toLowerCase()))) phrases.add(s);
    for (const n of m.numbers.filter(threshold)) if (gNumbers.has(n)) numbers.add(n);
  }
  return { phrases: [...phrases], numbers: [...numbers] };
}

describe('the evaluation set is written apart from the monitors', () => {
  const monitors = readdirSync(MONITORS)
    .filter((f) => f.endsWith('.ts'))
    .map((f) => readFileSync(join(MONITORS, f), 'utf8'));
  const generator = readFileSync(join(__dirname, 'generate.mjs'), 'utf8');

  it('shares no error string, phrase or threshold with detectors/monitors/*.ts', () => {
    expect(monitors.length).toBeGreaterThan(3);
    expect(shared(generator, monitors)).toEqual({ phrases: [], numbers: [] });
  });

  it('the check can fail: a monitor phrase or threshold copied into a generator is caught', () => {
    const copied = `${generator}\nconst x = 'the same request was sent again'; const y = 0.37;`;
    const planted = [...monitors, 'const e = `the same request was sent again (${n})`; const t = 0.37;'];
    const found = shared(copied, planted);
    expect(found.phrases).toContain('the same request was sent again');
    expect(found.numbers).toContain(0.37);
  });
});
