// Run only by test/support/reap.test.ts (through its own vitest config; not a *.test.ts of the suite): starts a long-lived child, writes its pid
// and a grandchild's, then fails.
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { expect, it } from 'vitest';

it('fails while its child runs', async () => {
  const child = spawn(
    'sh',
    ['-c', `${JSON.stringify(process.execPath)} -e "setInterval(() => {}, 1000)" & echo $!; wait`],
    { stdio: ['ignore', 'pipe', 'ignore'] },
  );
  const grandchild = await new Promise<string>((resolve) =>
    child.stdout.once('data', (c: Buffer) => resolve(c.toString().trim())),
  );
  writeFileSync(process.env.REAP_PIDS!, JSON.stringify([child.pid, Number(grandchild)]));
  expect('the test failed').toBe('on purpose');
});
