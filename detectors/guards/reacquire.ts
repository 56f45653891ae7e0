/**
 * Reacquire: the guarded readback of the receiver contract ("When Messages Go Wrong" §2.10). A message that fails
 * its contract triggers at most one reacquisition through a user-supplied function (e.g. re-observe the cart and wrap
 * it as a fresh envelope); the fresh message travels the same boundary again and is checked again; it is accepted
 * only if clean.
 */
import type { AgentMessage } from '../../instrumentation/types';
import type { Finding } from '../types';

export type Reacquire = (
  message: AgentMessage,
  findings: readonly Finding[],
) => AgentMessage | undefined | Promise<AgentMessage | undefined>;

export type ReadbackResult =
  | { outcome: 'clean'; messages: AgentMessage[] }
  | { outcome: 'recovered'; messages: AgentMessage[]; findings: Finding[] }
  | { outcome: 'unrecovered'; messages: AgentMessage[]; findings: Finding[] };

/**
 * Check `delivered` with `check`; on findings, reacquire once and pass the fresh message through `redeliver` (the
 * boundary again), then check what arrives. At most one readback per call.
 */
export async function guardedReadback(
  delivered: AgentMessage,
  check: (m: AgentMessage) => Finding[],
  reacquire: Reacquire | undefined,
  redeliver: (m: AgentMessage) => Promise<AgentMessage[]>,
): Promise<ReadbackResult> {
  const findings = check(delivered);
  if (findings.length === 0) return { outcome: 'clean', messages: [delivered] };
  if (!reacquire) return { outcome: 'unrecovered', messages: [delivered], findings };
  const fresh = await reacquire(delivered, findings);
  if (!fresh) return { outcome: 'unrecovered', messages: [delivered], findings };
  const arrived = await redeliver(fresh);
  if (arrived.length === 0) return { outcome: 'unrecovered', messages: [], findings };
  const again = arrived.flatMap((m) => check(m));
  if (again.length === 0) return { outcome: 'recovered', messages: arrived, findings };
  return { outcome: 'unrecovered', messages: arrived, findings: again };
}
