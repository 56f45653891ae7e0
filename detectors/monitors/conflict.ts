/**
 * Output conflict (ARCF: inter-agent misalignment; MAST 2.5, nearest): one agent is told two different things about
 * the same entity by two different agents in the same task — messages to the same receiver, from different
 * senders, whose identity fields (`*_id`, `sku`, at the top level of the payload or one object level down, where a
 * forwarded result sits) disagree. Observable only where a receiver hears from more than one sender and the payloads
 * are captured (live, or with content capture on); otherwise silent.
 */
import type { AgentMessage } from '../../instrumentation/types';
import type { Detector, Finding, MessageObservation, Observation } from '../types';
import { monitorFinding } from './common';

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
      } else if (depth === 0 && v !== null && typeof v === 'object' && !Array.isArray(v)) scan(v as Record<string, unknown>, `${prefix}${k}.`, 1);
    }
  };
  if (payload !== null && typeof payload === 'object' && !Array.isArray(payload)) scan(payload as Record<string, unknown>, '', 0);
  return out;
}

const delivered = (o: MessageObservation): AgentMessage | undefined => (o.hasContent || o.original ? o.delivered[0] : undefined);

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
        out.push(monitorFinding(OUTPUT_CONFLICT, 'output_conflict', 'semantic', 'warning', 0.7, `${now.target} was told two values of ${k}: by ${then.source} (${v.length} chars) and by ${now.source} (${w.length} chars)`, { field: k }));
        return out;
      }
    }
    return out;
  },
};
