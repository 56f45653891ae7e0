/**
 * `node --require faultline/register app.js` (CommonJS) and `import 'faultline/register'`: start faultline from its
 * configuration (the environment and faultline.config.*, docs/configuration.md) before the application's first line.
 *
 * - Bad input (an invalid plan, guard or configuration file, a switch that is not one, a plan refused in production)
 *   stops the process with exit code 2 and a message naming the variable or the file, the field and the problem,
 *   before the app runs: a chaos experiment must not silently run without the faults it planned.
 * - Any other failure of ours (even one while loading our modules) is reported once on stderr and the application
 *   runs uninstrumented: it never throws into the application.
 */
try {
  (require('./start') as typeof import('./start')).startRuntime();
} catch (err) {
  const { isFaultlineError, FaultlineInputError } = require('./errors') as typeof import('./errors');
  if (err instanceof FaultlineInputError) {
    process.stderr.write(`faultline: ✖ ${err.message.replace(/^✖ /, '')}\n`);
    process.exit(2);
  }
  const reason = isFaultlineError(err) || err instanceof Error ? err.message : String(err);
  process.stderr.write(`faultline: could not start, the application runs without it: ${reason}\n`);
}

export {};
