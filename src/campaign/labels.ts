/**
 * Attributes the campaign puts on each run's workflow root span, next to faultline.task.id and the ground-truth
 * condition (faultline.fault.condition). The outcome is the evaluator's verdict (not ground truth about the fault, so
 * diagnosers may read it); the cell coordinates let any trace reader regroup runs without the summary file.
 */
export const ATTR_TASK_SUCCESS = 'faultline.task.success' as const;
export const ATTR_CAMPAIGN_ID = 'faultline.campaign.id' as const;
export const ATTR_CAMPAIGN_RUN = 'faultline.campaign.run' as const;
export const ATTR_CAMPAIGN_FAMILY = 'faultline.campaign.family' as const;
export const ATTR_CAMPAIGN_TASK = 'faultline.campaign.task' as const;
export const ATTR_CAMPAIGN_TOPOLOGY = 'faultline.campaign.topology' as const;
export const ATTR_CAMPAIGN_ARM = 'faultline.campaign.arm' as const;
export const ATTR_CAMPAIGN_REP = 'faultline.campaign.rep' as const;
/** The run's twin (the clean run of a faulted one, the faulted run of a clean one), by task id: on every run. */
export const ATTR_CAMPAIGN_MATCHED = 'faultline.campaign.matched_task' as const;
