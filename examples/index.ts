/**
 * The example multi-agent systems: two task families (shopping with an evidence contract, coding checked by running
 * tests) in three topologies, calling the model through the openai SDK and handing off through faultline's channel.
 */
import { coding } from './coding/workspace';
import type { TaskFamily } from './agents/family';
import { shopping } from './shopping/store';

export { connectModel, type ModelConnection, type ConnectOptions } from './agents/model';
export {
  runTask,
  TOPOLOGIES,
  type Topology,
  type TaskRun,
  type RunTaskOptions,
  type EvidenceTransport,
} from './agents/workflow';
export type { TaskFamily, TaskDef, Outcome, Json } from './agents/family';
export { shopping, coding };

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- families differ in task and environment types
export const FAMILIES: Record<string, TaskFamily<any, any>> = { shopping, coding };
