/**
 * AgentChaos's published RQ3 figures (paper §5.4, Table 9; shared/reference/fault-catalog.md §1.10). Percentages.
 * They were measured on another dataset (AgentChaos's own benchmark tasks) from another input (the final agent text
 * only), so the reports print them in a section of their own under this label, never as rows or columns of ours.
 */
export const PUBLISHED_TITLE = 'Published elsewhere, not comparable row for row: AgentChaos (ASE 2026, §5.4, Table 9)';
export const PUBLISHED_NOTE =
  "(another dataset, AgentChaos's benchmark tasks; another input, the final agent text only)";

export interface PublishedFigures {
  typeAccuracy: number;
  stepAccuracy: number;
  perType: Record<string, { type: number; step: number }>;
}

export const AGENTCHAOS_RULE: PublishedFigures = {
  typeAccuracy: 52.45,
  stepAccuracy: 55.5,
  perType: {
    timeout: { type: 91.04, step: 89.55 },
    error: { type: 47.57, step: 69.9 },
    empty: { type: 96.74, step: 38.04 },
    truncate: { type: 4.3, step: 31.18 },
    corrupt: { type: 13.64, step: 26.36 },
    schema: { type: 52.46, step: 63.93 },
  },
};

export const AGENTCHAOS_LLM: PublishedFigures = {
  typeAccuracy: 47.25,
  stepAccuracy: 53.52,
  perType: {
    timeout: { type: 87.31, step: 88.81 },
    error: { type: 47.57, step: 66.02 },
    empty: { type: 77.17, step: 31.52 },
    truncate: { type: 34.41, step: 40.86 },
    corrupt: { type: 6.36, step: 20 },
    schema: { type: 27.05, step: 60.66 },
  },
};

export const AGENTCHAOS_KAPPA = { type: 0.567, step: 0.661 };
