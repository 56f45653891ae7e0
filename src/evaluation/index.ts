export {
  accuracy,
  falsePositives,
  stepCorrect,
  typeCorrect,
  pct,
  type Accuracy,
  type EvalRow,
  type FalsePositives,
  type TypeRow,
} from './accuracy';
export { confusion, type ConfusionMatrix } from './confusion';
export { cohenKappa, kappaBetween, stepLabel, type KappaPair } from './kappa';
export { evaluate, summarize, type DiagnoserScore, type EvalReport, type EvaluateOptions } from './evaluate';
export { AGENTCHAOS_LLM, AGENTCHAOS_RULE, AGENTCHAOS_KAPPA, type PublishedFigures } from './agentchaos';
export { groundTruth, type GroundTruth } from '../diagnosers/ground-truth';
