/**
 * The coding environment: a workspace of files and a test runner that really executes the code (in a `node:vm`
 * context with a time limit). The Worker runs the visible tests; the evaluator reruns the visible *and* hidden tests
 * on the file the Decision submitted.
 */
import { isDeepStrictEqual } from 'node:util';
import { runInNewContext } from 'node:vm';
import type { Json, Outcome, TaskDef, TaskFamily } from '../agents/family';

interface TestCase {
  args: unknown[];
  expected: unknown;
}

export interface CodingTask extends TaskDef {
  fn: string;
  visible: TestCase[];
  hidden: TestCase[];
}

const t = (args: unknown[], expected: unknown): TestCase => ({ args, expected });

export const CODING_TASKS: readonly CodingTask[] = [
  {
    id: 'code-sum-even',
    fn: 'sumEven',
    text: 'Implement the JavaScript function sumEven(numbers) that returns the sum of the even numbers in the array.',
    visible: [t([[1, 2, 3, 4]], 6), t([[]], 0)],
    hidden: [t([[-2, 5, 8]], 6), t([[7]], 0), t([[2, 2, 2]], 6)],
  },
  {
    id: 'code-palindrome',
    fn: 'isPalindrome',
    text: 'Implement the JavaScript function isPalindrome(text) that tells whether text reads the same backwards, ignoring case and non-alphanumeric characters.',
    visible: [t(['Racecar'], true), t(['abc'], false)],
    hidden: [t(['A man, a plan, a canal: Panama'], true), t([''], true), t(['ab'], false)],
  },
  {
    id: 'code-fizzbuzz',
    fn: 'fizzBuzz',
    text: 'Implement the JavaScript function fizzBuzz(n) that returns the strings 1..n with multiples of 3 as Fizz, of 5 as Buzz and of both as FizzBuzz.',
    visible: [t([5], ['1', '2', 'Fizz', '4', 'Buzz'])],
    hidden: [
      t([1], ['1']),
      t([15], ['1', '2', 'Fizz', '4', 'Buzz', 'Fizz', '7', '8', 'Fizz', 'Buzz', '11', 'Fizz', '13', '14', 'FizzBuzz']),
    ],
  },
  {
    id: 'code-word-count',
    fn: 'wordCount',
    text: 'Implement the JavaScript function wordCount(text) that returns an object mapping each lower-cased word to how often it occurs.',
    visible: [t(['a b a'], { a: 2, b: 1 })],
    hidden: [t(["It's it, IT"], { "it's": 1, it: 2 }), t([''], {})],
  },
];

export class Workspace {
  readonly files = new Map<string, string>();
  submitted?: string;
}

/** Run `code` (a CommonJS module exporting `fn`) against the cases; never throws. */
export function runTests(
  code: string | undefined,
  fn: string,
  cases: TestCase[],
): { passed: number; total: number; failures: string[] } {
  const failures: string[] = [];
  if (code === undefined) return { passed: 0, total: cases.length, failures: ['file not found'] };
  let impl: unknown;
  try {
    const sandbox = { module: { exports: {} as Record<string, unknown> }, exports: {} };
    runInNewContext(code, sandbox, { timeout: 1000 });
    impl = sandbox.module.exports[fn];
  } catch (err) {
    return { passed: 0, total: cases.length, failures: [`load error: ${String(err)}`] };
  }
  if (typeof impl !== 'function') return { passed: 0, total: cases.length, failures: [`${fn} is not exported`] };
  let passed = 0;
  for (const c of cases) {
    try {
      // Results cross the vm boundary: compare as plain JSON values.
      const got: unknown = JSON.parse(JSON.stringify((impl as (...a: unknown[]) => unknown)(...c.args)) ?? 'null');
      if (isDeepStrictEqual(got, c.expected)) passed++;
      else
        failures.push(
          `${fn}(${JSON.stringify(c.args).slice(1, -1)}) = ${JSON.stringify(got)}, expected ${JSON.stringify(c.expected)}`,
        );
    } catch (err) {
      failures.push(`${fn} threw ${String(err)}`);
    }
  }
  return { passed, total: cases.length, failures };
}

const byPath = (ws: Workspace, path: unknown): string | undefined =>
  typeof path === 'string' ? ws.files.get(path) : undefined;

export const coding: TaskFamily<CodingTask, Workspace> = {
  name: 'coding',
  tasks: CODING_TASKS,
  tools: [
    fn('write_file', 'Write a file in the workspace.', { path: { type: 'string' }, content: { type: 'string' } }, [
      'path',
      'content',
    ]),
    fn('run_tests', "Run the task's tests against a file.", { path: { type: 'string' } }, ['path']),
  ],
  actions: new Set(['write_file']),
  createEnv: () => new Workspace(),
  runTool(ws, task, name, args) {
    switch (name) {
      case 'write_file':
        if (typeof args.path !== 'string' || typeof args.content !== 'string')
          return { error: 'invalid arguments: path and content strings required' };
        ws.files.set(args.path, args.content);
        return { ok: true, path: args.path, bytes: Buffer.byteLength(args.content) };
      case 'run_tests': {
        if (typeof args.path !== 'string') return { error: 'invalid arguments: path string required' };
        const r = runTests(ws.files.get(args.path), task.fn, task.visible);
        return { passed: r.passed, total: r.total, failures: r.failures };
      }
      default:
        return { error: `invalid arguments: unknown tool ${name}` };
    }
  },
  commit(ws, decision) {
    const path = ((decision.submit ?? {}) as Json).path;
    if (byPath(ws, path) === undefined) return { error: `no file ${String(path)} to submit` };
    ws.submitted = path as string;
    return { ok: true, submitted: path };
  },
  reobserve(ws, task) {
    const path = `${task.fn}.js`;
    const r = runTests(byPath(ws, path), task.fn, task.visible);
    return {
      function: task.fn,
      path,
      tests_passed: r.passed,
      tests_total: r.total,
      all_passed: r.total > 0 && r.passed === r.total,
    };
  },
  snapshot: (ws) => ({ files: [...ws.files], ...(ws.submitted !== undefined ? { submitted: ws.submitted } : {}) }),
  restore(ws, snap) {
    ws.files.clear();
    for (const [path, content] of (snap.files as Array<[string, string]>) ?? []) ws.files.set(path, content);
    ws.submitted = snap.submitted as string | undefined;
  },
  evidenceFields: {
    task_id: 'string',
    function: 'string',
    path: 'string',
    tests_passed: 'integer',
    tests_total: 'integer',
    all_passed: 'boolean',
  },
  evaluate(ws, task): Outcome {
    if (ws.submitted === undefined) return { success: false, reason: 'nothing was submitted' };
    const r = runTests(ws.files.get(ws.submitted), task.fn, [...task.visible, ...task.hidden]);
    return r.passed === r.total
      ? { success: true, reason: `all ${r.total} tests pass` }
      : { success: false, reason: `${r.passed}/${r.total} tests pass: ${r.failures[0] ?? ''}` };
  },
};

function fn(name: string, description: string, properties: Json, required: string[]) {
  return {
    type: 'function' as const,
    function: { name, description, parameters: { type: 'object', properties, required, additionalProperties: false } },
  };
}
