/**
 * `faultline demo`: the main job end to end on the embedded defaults — the smoke campaign over the example
 * multi-agent workflows (clean and faulted runs matched, per topology and fault, with the protection study), then
 * `faultline eval` on the labelled traces it wrote. Offline, a couple of minutes at most.
 */
import { resolve } from 'node:path';
import type { Command } from '../types';
import { executeCampaign, readCampaignOptions } from './campaign';

export const command: Command = {
  name: 'demo',
  summary: 'run a small fault-injection campaign on the example multi-agent workflows, then diagnose its traces',
  usage: 'faultline demo [--out DIR] [--concurrency N]',
  options: [
    { name: 'out', value: 'DIR', description: 'output directory', default: 'faultline-demo' },
    { name: 'concurrency', value: 'N', description: 'cells run at once', default: 4 },
    {
      name: 'use-env',
      description: 'use the model in OPENAI_BASE_URL / OPENAI_API_KEY / FAULTLINE_MODEL instead of the embedded mock',
    },
  ],
  details: `Runs the "smoke" campaign preset on the embedded mock model (no network, no API key), prints the damage per
topology and fault, the silent failures and what each protection recovers, then scores the rule diagnoser on the
labelled traces. It ignores OPENAI_BASE_URL unless --use-env is given (so it never spends API credit by surprise).`,
  async run({ options }) {
    const run = {
      ...readCampaignOptions(
        { out: options.out, concurrency: options.concurrency },
        { preset: 'smoke', out: 'faultline-demo' },
      ),
      embedded: options['use-env'] !== true,
    };
    const result = await executeCampaign(run, { stdout: process.stdout, stderr: process.stderr });
    if (result.records.length === 0) return 1;
    process.stdout.write(
      '\nDiagnosing the labelled traces (faultline eval, ground truth hidden from the diagnoser):\n\n',
    );
    const evalHtml = resolve(run.out, 'eval.html');
    const { command: evalCommand } = require('./eval') as typeof import('./eval');
    const code = await evalCommand.run({
      options: { diagnoser: ['rule'], format: 'table', html: evalHtml },
      positionals: [result.files.traces],
    });
    process.stdout.write(`\nDone. Open ${result.files.report} (campaign) and ${evalHtml} (diagnosis).\n`);
    return code;
  },
};
