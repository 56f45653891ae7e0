/**
 * The prompt layout the example agents write and the embedded model reads: the system prompt names the role
 * ("You are the Planner agent"), the user message is a list of titled sections:
 *
 *     ### Task
 *     Add exactly 3 units of "Blue Ceramic Mug" to the cart and place the order.
 *     ### Plan
 *     {"family":"shopping",...}
 *
 * A real model reads the same prompts as plain text; the layout only makes the mock's reading unambiguous.
 */

export type AgentRole = 'Planner' | 'Worker' | 'Verifier' | 'Decision' | 'Supervisor';

export const ROLES: readonly AgentRole[] = ['Planner', 'Worker', 'Verifier', 'Decision', 'Supervisor'];

/** Marker of "nothing arrived" in a section; agents write it when a handoff they wait for never came. */
export const NONE_RECEIVED = '(none received)';

export function formatSections(sections: Record<string, string | undefined>): string {
  return Object.entries(sections)
    .map(([title, body]) => `### ${title}\n${body ?? NONE_RECEIVED}`)
    .join('\n');
}

/** Parse `### Title` sections (titles as written; later duplicates win). */
export function readSections(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  let title: string | undefined;
  let lines: string[] = [];
  const flush = (): void => {
    if (title !== undefined) out[title] = lines.join('\n').trim();
  };
  for (const line of text.split('\n')) {
    const m = /^###\s+(.+?)\s*$/.exec(line);
    if (m) {
      flush();
      title = m[1];
      lines = [];
    } else lines.push(line);
  }
  flush();
  return out;
}

/** The role named in a system prompt ("You are the Verifier agent"), if any. */
export function roleOf(systemPrompt: string): AgentRole | undefined {
  const m = /You are the (\w+) agent/.exec(systemPrompt);
  return m && (ROLES as readonly string[]).includes(m[1]) ? (m[1] as AgentRole) : undefined;
}

/** First JSON object in a text (models often wrap JSON in prose or fences); undefined if none parses. */
export function extractJson(text: string | undefined): Record<string, unknown> | undefined {
  if (!text || text.trim() === NONE_RECEIVED) return undefined;
  const start = text.indexOf('{');
  if (start < 0) return undefined;
  // Try the widest candidate first, then shrink to earlier closing braces.
  for (let end = text.lastIndexOf('}'); end > start; end = text.lastIndexOf('}', end - 1)) {
    try {
      const v: unknown = JSON.parse(text.slice(start, end + 1));
      if (v && typeof v === 'object' && !Array.isArray(v)) return v as Record<string, unknown>;
    } catch {
      /* keep shrinking */
    }
  }
  return undefined;
}
