/** The published JSON Schema of a plan (src/plan/plan.schema.json), generated from the zod schema. */
import { z } from 'zod';
import { FaultPlan } from './schema';

export function planJsonSchema(): Record<string, unknown> {
  return z.toJSONSchema(FaultPlan, { io: 'input' }) as Record<string, unknown>;
}

/** The file's text: 2-space JSON with a trailing newline. */
export function planJsonSchemaText(): string {
  return JSON.stringify(planJsonSchema(), null, 2) + '\n';
}
