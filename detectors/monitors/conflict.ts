/**
 * Output conflict (ARCF: inter-agent misalignment; MAST 2.5, nearest): one agent is told two different things about
 * the same entity by two different agents in the same task — messages to the same receiver, from different
 * senders, whose identity fields (`*_id`, `sku`, at the top level of the payload or one object level down, where a
 * forwarded result sits) disagree. Observable only where a receiver hears from more than one sender and the payloads
 * are captured (live, or with content capture on); otherwise silent.
 *
 * Offline, across agents (`valueConflicts`, any producer's spans with content): agents that hold different values of
 * the same fact — an agent's answer reports an identifier (`FL-8777`, `ORD-28115`: letters, a dash, characters with
 * a digit) or a percentage that no tool returned and no turn was given, while a near twin of it (the same with two
 * adjacent characters swapped or one digit changed: a copying error, not another entity) is what another agent said
 * or used, or what this agent was told. Only answers count as holding a value: the arguments of a tool call may be a
 * probe (trying the next id), and what the probe returns says whether it exists.
 */
import type { AgentMessage, GenAiMessage } from '../../instrumentation/types';
import type { SpanRecord } from '../../src/traces/model';
import type { Detector, Finding, LlmObservation, MessageObservation, Observation } from '../types';
import { monitorFinding } from './common';
import type { WorkflowRun } from './read';

export const OUTPUT_CONFLICT = 'output_conflict';

/** Identity fields; envelope ids (the task, session, message, action, evidence record) are bookkeeping, not facts. */
const IDENTITY = /(^|_)id$|^sku$/i;
const ENVELOPE = /^(task|session|message|action|evidence|trace|span|run|request|conversation|correlation)_id$|^id$/i;

function identities(payload: unknown): Map<string, string> {
  const out = new Map<string, string>();
  const scan = (obj: Record<string, unknown>, prefix: string, depth: number): void => {
    for (const [k, v] of Object.entries(obj)) {
      if ((typeof v === 'string' && v !== '') || typeof v === 'number') {
        if (IDENTITY.test(k) && !ENVELOPE.test(k)) out.set(k, String(v));
      } else if (depth === 0 && v !== null && typeof v === 'object' && !Array.isArray(v))
        scan(v as Record<string, unknown>, `${prefix}${k}.`, 1);
    }
  };
  if (payload !== null && typeof payload === 'object' && !Array.isArray(payload))
    scan(payload as Record<string, unknown>, '', 0);
  return out;
}

const delivered = (o: MessageObservation): AgentMessage | undefined =>
  o.hasContent || o.original ? o.delivered[0] : undefined;

export const outputConflictDetector: Detector = {
  name: OUTPUT_CONFLICT,
  level: 'workflow',
  applies: (obs) => obs.kind === 'message' && obs.delivered.length > 0,
  detect(obs, ctx): Finding[] {
    const now = delivered(obs as MessageObservation);
    if (!now || now.source === '') return [];
    const mine = identities(now.payload);
    if (mine.size === 0) return [];
    const out: Finding[] = [];
    for (const e of ctx.earlier as readonly Observation[]) {
      if (e.kind !== 'message') continue;
      const then = delivered(e);
      if (!then || then.target !== now.target || then.source === now.source || then.source === '') continue;
      for (const [k, v] of identities(then.payload)) {
        const w = mine.get(k);
        if (w === undefined || w === v) continue;
        out.push(
          monitorFinding(
            OUTPUT_CONFLICT,
            'output_conflict',
            'semantic',
            'warning',
            0.7,
            `${now.target} was told two values of ${k}: by ${then.source} (${v.length} chars) and by ${now.source} (${w.length} chars)`,
            { field: k },
          ),
        );
        return out;
      }
    }
    return out;
  },
};

/** Identifiers as systems print them (a letter prefix, a dash, then characters with a digit), and percentages. */
const IDENT = /\b[A-Z][A-Z0-9]{0,7}-(?=[A-Z0-9]*\d)[A-Z0-9]{3,}\b|\b\d{2,}(?:\.\d+)?%/g;

const identsIn = (text: string): string[] => text.match(IDENT) ?? [];

/** Two identifiers of one shape that differ by two adjacent characters swapped, or by one character. */
function twins(a: string, b: string): boolean {
  if (a === b || a.length !== b.length) return false;
  const diff: number[] = [];
  for (let i = 0; i < a.length && diff.length <= 2; i++) if (a[i] !== b[i]) diff.push(i);
  if (diff.length === 1) return /\d/.test(a[diff[0]!]!) && /\d/.test(b[diff[0]!]!);
  return diff.length === 2 && diff[1] === diff[0]! + 1 && a[diff[0]!] === b[diff[1]!] && a[diff[1]!] === b[diff[0]!];
}

const textOf = (m: GenAiMessage): string =>
  m.parts.map((p) => (p.type === 'text' && typeof p.content === 'string' ? p.content : '')).join(' ');

/** Values of one identifier that two agents hold differently (content capture needed). */
export function valueConflicts(run: WorkflowRun): Array<{ finding: Finding; span: SpanRecord }> {
  /** What the world said: tool results, and what each turn was given (its first request's user messages). */
  const given = new Set<string>();
  const toldTo = new Map<string, Set<string>>();
  /** What each agent reported in its answers, and what it used anywhere (answers and tool arguments), with where. */
  const said: Array<{ agent: string; value: string; span: SpanRecord }> = [];
  const used: Array<{ agent: string; value: string }> = [];
  const firstOfTurn = new Set<string>();
  for (const step of run.steps) {
    if (step.tool?.result !== undefined) for (const v of identsIn(step.tool.result)) given.add(v);
    const agent = step.tool?.agent ?? step.observation?.scope?.agent;
    if (agent === undefined) continue;
    if (step.tool?.arguments !== undefined)
      for (const v of identsIn(step.tool.arguments)) used.push({ agent, value: v });
    const o = step.observation;
    if (o?.kind !== 'llm' || !o.hasContent) continue;
    const llm = o as LlmObservation;
    const turn = llm.scope?.turn;
    if (turn !== undefined && !firstOfTurn.has(turn)) {
      firstOfTurn.add(turn);
      const told = toldTo.get(agent) ?? new Set<string>();
      for (const m of llm.request?.messages ?? [])
        if (m.role === 'user') for (const v of identsIn(textOf(m))) told.add(v);
      toldTo.set(agent, told);
    }
    for (const v of identsIn(llm.response.text)) {
      said.push({ agent, value: v, span: step.span });
      used.push({ agent, value: v });
    }
    for (const c of llm.response.toolCalls) for (const v of identsIn(c.arguments)) used.push({ agent, value: v });
  }
  const out: Array<{ finding: Finding; span: SpanRecord }> = [];
  const told = (agent: string, v: string): boolean => toldTo.get(agent)?.has(v) === true;
  for (const x of said) {
    if (given.has(x.value) || [...toldTo.values()].some((t) => t.has(x.value))) continue;
    const twin =
      used.find((y) => y.agent !== x.agent && twins(x.value, y.value))?.value ??
      [...(toldTo.get(x.agent) ?? [])].find((v) => twins(x.value, v));
    if (twin === undefined) continue;
    const others = [...new Set(used.filter((y) => y.value === twin && y.agent !== x.agent).map((y) => y.agent))];
    const source =
      others.length > 0 ? others.join(', ') : told(x.agent, twin) ? `what ${x.agent} was given` : 'the tools';
    out.push({
      span: x.span,
      finding: monitorFinding(
        OUTPUT_CONFLICT,
        'output_conflict',
        'semantic',
        'warning',
        0.7,
        `${x.agent} reported a ${x.value.length}-char value no tool returned, a near twin of the one ${source} held (two characters swapped or one digit changed)`,
      ),
    });
    break;
  }
  return out;
}
