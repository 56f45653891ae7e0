/**
 * Role violation (ARCF: inter-agent misalignment; MAST 1.2 Disobey role specification): an agent acting outside
 * what it declared (`runAgent(name, fn, { role, tools, targets })`) — calling a tool that is not among its tools, or
 * sending to an agent that is not among its targets. Undeclared agents are never judged: a declaration is the
 * specification the role is measured against. Tool names and agent names are recorded without content capture, so
 * this works on content-free traces too.
 */
import type { AgentDeclaration } from '../../instrumentation/agents/declarations';
import type { Detector, Finding, LlmObservation, MessageObservation } from '../types';
import { monitorFinding } from './common';

export const ROLE_VIOLATION = 'role_violation';

const list = (xs: readonly string[]): string => (xs.length === 0 ? 'none' : xs.slice(0, 8).join(', ') + (xs.length > 8 ? ', …' : ''));

/** A tool call outside the agent's declared tools, as a finding (also used offline for tool execution spans). */
export function toolOutsideRole(agent: string, d: AgentDeclaration | undefined, tool: string, field?: string): Finding | undefined {
  if (!d?.tools || tool === '' || d.tools.includes(tool)) return undefined;
  const role = d.role !== undefined ? ` (${d.role})` : '';
  return monitorFinding(ROLE_VIOLATION, 'role_violation', 'semantic', 'error', 0.9, `agent ${agent}${role} called tool ${tool}, outside its declared tools: ${list(d.tools)}`, field !== undefined ? { field } : undefined);
}

/** A message to a target outside the sender's declared targets. */
export function targetOutsideRole(agent: string, d: AgentDeclaration | undefined, target: string): Finding | undefined {
  if (!d?.targets || target === '' || d.targets.includes(target)) return undefined;
  const role = d.role !== undefined ? ` (${d.role})` : '';
  return monitorFinding(ROLE_VIOLATION, 'role_violation', 'semantic', 'error', 0.9, `agent ${agent}${role} sent to ${target}, outside its declared targets: ${list(d.targets)}`);
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
