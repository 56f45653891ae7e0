/**
 * Entity grounding: a tool-call argument naming an entity — a city, a product id, a SKU, a customer — that appears
 * nowhere in what the model was given (messages, tool results, system instructions, tool definitions). Models copy
 * entities from the conversation; one that comes from nowhere is a wrong or stale entity (AgentChaos
 * `compound_wrong_entity` / `compound_stale_data`). Free-text arguments (queries, prompts, code) are not entities and
 * are not checked.
 */
import type { Detector, Finding, LlmObservation, Observation } from './types';
import { argumentsValue, conversationText, failedCall } from './text';

/** Keys whose values are entities. */
/** Keys whose values are entities. Country / region / state are left out: models derive them from a city. */
const ENTITY_KEY =
  /(^|[_\-.]|[a-z](?=[A-Z]))(city|location|place|town|destination|origin|address|sku|product|ticker|symbol|customer|account|user(name)?|company|entity|airport|station)(_?id|_?name|_?code)?$/i;
const ID_KEY = /(^|_|[a-z])(id|Id|ID)$/;

/** Values that are identifiers or proper names (not sentences, numbers, dates, paths or URLs). */
function entityLike(v: string): boolean {
  if (v.length < 2 || v.length > 60) return false;
  if (/^\d+([.,]\d+)?$/.test(v) || /^\d{4}-\d{2}-\d{2}/.test(v) || /[/\\]|:\/\//.test(v)) return false;
  if (v.split(/\s+/).length > 4) return false;
  if (/^[A-Z]{2,3}$/.test(v)) return false; // ISO-style codes (USA, SFO) are derived knowledge, not copied
  return /[A-Za-z]/.test(v);
}

function grounded(value: string, convo: string): boolean {
  const v = value.toLowerCase().trim();
  if (convo.includes(v)) return true;
  // "San Francisco, CA" grounded by "San Francisco": every word of 3+ letters must appear.
  const words = v.split(/[\s,;]+/).filter((w) => w.length >= 3);
  return words.length > 0 && words.every((w) => convo.includes(w));
}

export const entityGroundingDetector: Detector = {
  name: 'entity_grounding',
  applies: (obs) =>
    obs.kind === 'llm' &&
    obs.hasContent &&
    obs.request !== undefined &&
    obs.response.toolCalls.length > 0 &&
    !failedCall(obs),
  detect(obs: Observation): Finding[] {
    const o = obs as LlmObservation;
    const convo = conversationText(o.request!);
    const out: Finding[] = [];
    o.response.toolCalls.forEach((tc, index) => {
      const args = argumentsValue(tc);
      if (typeof args !== 'object' || args === null || Array.isArray(args)) return;
      for (const [k, v] of Object.entries(args as Record<string, unknown>)) {
        if (typeof v !== 'string' || !(ENTITY_KEY.test(k) || ID_KEY.test(k)) || !entityLike(v)) continue;
        if (grounded(v, convo)) continue;
        out.push({
          detector: 'entity_grounding',
          faultType: 'semantic',
          severity: 'warning',
          confidence: 0.6,
          evidence: `tool argument ${k} (${v.length} chars) names something that appears nowhere in the conversation`,
          location: { spanId: o.spanId, field: `tool_calls[${index}].arguments.${k}`, index },
        });
        return;
      }
    });
    return out;
  },
};
