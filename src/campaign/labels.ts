/**
 * Attributes a campaign puts on each run's root span, next to faultline.task.id and the ground-truth condition
 * (faultline.fault.condition: the condition id, or `clean`). The outcome is the evaluator's verdict (not ground truth
 * about the fault); the cell coordinates let any trace reader regroup runs without the summary file.
 *
 * None of them tells a faulted run from its clean twin: both carry the same keys with the same values (the pair
 * number, not a pointer from one twin to the other; no run sequence number, whose order would give the role away),
 * and task ids are opaque. Which twin was faulted is ground truth, under the prefix diagnosers never see.
 */
import { randomBytes } from 'node:crypto';

export const ATTR_TASK_SUCCESS = 'faultline.task.success' as const;
export const ATTR_CAMPAIGN_ID = 'faultline.campaign.id' as const;
/** The matched pair (a faulted run and its clean twin): the same number on both. */
export const ATTR_CAMPAIGN_PAIR = 'faultline.campaign.pair' as const;
export const ATTR_CAMPAIGN_FAMILY = 'faultline.campaign.family' as const;
export const ATTR_CAMPAIGN_TASK = 'faultline.campaign.task' as const;
export const ATTR_CAMPAIGN_TOPOLOGY = 'faultline.campaign.topology' as const;
export const ATTR_CAMPAIGN_ARM = 'faultline.campaign.arm' as const;
export const ATTR_CAMPAIGN_REP = 'faultline.campaign.rep' as const;

/** A run's task id: the campaign, the pair, and random hex, so the id says nothing about the run's role. */
export function runTaskId(campaignId: string, pair: number): string {
  return `${campaignId}-${pair}-${randomBytes(4).toString('hex')}`;
}
