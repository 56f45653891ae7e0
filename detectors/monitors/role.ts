/**
 * Role violation (ARCF: inter-agent misalignment; MAST 1.2 Disobey role specification): an agent acting outside
 * what it declared (`runAgent(name, fn, { role, tools, targets })`) — calling a tool that is not among its tools, or
 * sending to an agent that is not among its targets. Without a faultline declaration, an agent's role is the tools
 * its own LLM calls offered the model (`gen_ai.tool.definitions`, OpenLLMetry's `llm.request.functions.N.name`,
 * OpenInference's `llm.tools.N.tool.json_schema`, read by the span view): a tool execution by that agent of a tool
 * none of its calls offered is acting outside it. An agent whose calls record no definitions is never judged: the
 * specification the role is measured against is missing, not empty. Tool and agent names are recorded without
 * content capture, so this works on content-free traces too.
 */
import type { AgentDeclaration } from '../../instrumentation/agents/declarations';
import type { Detector, Finding, LlmObservation, MessageObservation, Observation } from '../types';
import { monitorFinding } from './common';

export const ROLE_VIOLATION = 'role_violation';

const list = (xs: readonly string[]): string =>
  xs.length === 0 ? 'none' : xs.slice(0, 8).join(', ') + (xs.length > 8 ? ', …' : '');

/** A tool call outside the agent's declared tools, as a finding (also used offline for tool execution spans);
 * `offered`: the set is the tools the agent's own calls offered the model, not a declaration. */
export function toolOutsideRole(
  agent: string,
  d: AgentDeclaration | undefined,
  tool: string,
  field?: string,
  offered = false,
): Finding | undefined {
  if (!d?.tools || tool === '' || d.tools.includes(tool)) return undefined;
  const role = d.role !== undefined ? ` (${d.role})` : '';
  const what = offered ? 'the tools its own calls offered the model' : 'its declared tools';
  return monitorFinding(
    ROLE_VIOLATION,
    'role_violation',
    'semantic',
    'error',
    offered ? 0.8 : 0.9,
    `agent ${agent}${role} called tool ${tool}, outside ${what}: ${list(d.tools)}`,
    field !== undefined ? { field } : undefined,
  );
}

/** The tools each agent's LLM calls offered the model, by agent name (agents whose calls offered none are absent). */
export function offeredTools(observations: readonly Observation[]): Map<string, string[]> {
  const out = new Map<string, Set<string>>();
  for (const o of observations) {
    const agent = o.scope?.agent;
    if (o.kind !== 'llm' || agent === undefined) continue;
    for (const t of o.request?.tools ?? []) {
      if (t.name === '') continue;
      const set = out.get(agent) ?? new Set<string>();
      set.add(t.name);
      out.set(agent, set);
    }
  }
  return new Map([...out].map(([k, v]) => [k, [...v]]));
}

/** A message to a target outside the sender's declared targets. */
export function targetOutsideRole(agent: string, d: AgentDeclaration | undefined, target: string): Finding | undefined {
  if (!d?.targets || target === '' || d.targets.includes(target)) return undefined;
  const role = d.role !== undefined ? ` (${d.role})` : '';
  return monitorFinding(
    ROLE_VIOLATION,
    'role_violation',
    'semantic',
    'error',
    0.9,
    `agent ${agent}${role} sent to ${target}, outside its declared targets: ${list(d.targets)}`,
  );
}

export const roleViolationDetector: Detector = {
  name: ROLE_VIOLATION,
  level: 'workflow',
  applies: (obs) => obs.scope !== undefined,
  detect(obs): Finding[] {
    if (obs.kind === 'llm') {
      const o = obs as LlmObservation;
      const agent = o.scope?.agent;
      const d = o.scope?.declaration;
      if (agent === undefined || !d?.tools) return [];
      const out: Finding[] = [];
      o.response.toolCalls.forEach((c, i) => {
        const f = toolOutsideRole(agent, d, c.name, `tool_calls[${i}]`);
        if (f) out.push(f);
      });
      return out;
    }
    const m = obs as MessageObservation;
    const sent = m.original ?? m.delivered[0];
    if (!sent || sent.source === '') return [];
    const d = sent.source === m.scope?.agent ? m.scope.declaration : m.scope?.agents?.get(sent.source);
    const f = targetOutsideRole(sent.source, d, sent.target);
    return f ? [f] : [];
  },
};
