/**
 * The configuration file's schema (`faultline.config.{json,yaml,yml}`, or the file FAULTLINE_CONFIG names), and its
 * reading. Loaded only when there is such a file: the schema brings zod (and the plan and guard schemas) in.
 * `config.schema.json` is generated from it (`io: 'input'`, what a user may write).
 */
import { readFileSync } from 'node:fs';
import { extname } from 'node:path';
import { z } from 'zod';
import { GuardConfigSchema } from '../detectors/guards/config';
import { FaultlineInputError } from './errors';
import { OTLP_ENDPOINT, OTLP_ENDPOINT_EXPECTED } from './otlp-endpoint';
import { FaultPlan } from './plan/schema';

const path = z.string().min(1);

export const ExportSection = z
  .strictObject({
    traces: z
      .array(z.enum(['otlp', 'console', 'file', 'none']))
      .optional()
      .meta({
        description:
          'trace exporters (OTEL_TRACES_EXPORTER). Default: file, or otlp when an OTLP endpoint is configured',
      }),
    file: path.optional().meta({
      description:
        'the OTLP/JSON-lines trace file, relative to this file (FAULTLINE_TRACES_FILE). Default ./faultline-traces.jsonl',
    }),
    otlp: z
      .strictObject({
        endpoint: z
          .string()
          .regex(OTLP_ENDPOINT, OTLP_ENDPOINT_EXPECTED)
          .optional()
          .meta({ description: 'base URL, /v1/traces and /v1/metrics are appended (OTEL_EXPORTER_OTLP_ENDPOINT)' }),
        protocol: z
          .enum(['http/protobuf', 'http/json'])
          .optional()
          .meta({ description: 'OTEL_EXPORTER_OTLP_PROTOCOL. Default http/protobuf' }),
        headers: z
          .record(z.string(), z.string())
          .optional()
          .meta({ description: 'extra request headers (OTEL_EXPORTER_OTLP_HEADERS)' }),
      })
      .optional(),
    metrics: z
      .array(z.enum(['otlp', 'console', 'none']))
      .optional()
      .meta({ description: 'metric exporters (OTEL_METRICS_EXPORTER). Default none' }),
  })
  .meta({ description: 'Where spans and metrics go. The OTEL_* variables override each field.' });

export const ConfigFile = z
  .strictObject({
    $schema: z.string().optional(),
    plan: z
      .union([path, FaultPlan])
      .optional()
      .meta({ description: 'a fault plan, or the path of a plan file relative to this file (FAULTLINE_PLAN)' }),
    disable: z
      .boolean()
      .optional()
      .meta({ description: 'no fault is injected, whatever the plan (FAULTLINE_DISABLE)' }),
    guards: z
      .union([path, GuardConfigSchema])
      .optional()
      .meta({ description: 'runtime guards, or the path of a guard file relative to this file (FAULTLINE_GUARDS)' }),
    detect: z.boolean().optional().meta({
      description: 'online detectors recording faultline.detection span events (FAULTLINE_DETECT). Default true',
    }),
    captureContent: z.boolean().optional().meta({
      description:
        'record message content on spans (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT). Default false',
    }),
    httpSpans: z.boolean().optional().meta({
      description:
        'HTTP client spans from @opentelemetry/instrumentation-undici (OTEL_NODE_DISABLED_INSTRUMENTATIONS=undici). Default true',
    }),
    export: ExportSection.optional(),
  })
  .meta({
    title: 'faultline configuration',
    description: 'faultline.config.json / .yaml: plan, guards, detection and export. See docs/configuration.md.',
  });

export type ConfigFile = z.infer<typeof ConfigFile>;
export type ConfigFileInput = z.input<typeof ConfigFile>;

/** Read and validate a configuration file (.json, else YAML, a superset of JSON). */
export function loadConfigFile(file: string): ConfigFile {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new FaultlineInputError(
      'FAULTLINE_FILE_NOT_FOUND',
      `cannot read the configuration file ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`,
      { cause: err },
    );
  }
  const json = extname(file).toLowerCase() === '.json';
  let data: unknown;
  try {
    data = json ? JSON.parse(text) : (require('yaml') as typeof import('yaml')).parse(text);
  } catch (err) {
    throw new FaultlineInputError(
      'FAULTLINE_CONFIG_INVALID',
      `the configuration file ${file} is not valid ${json ? 'JSON' : 'YAML'}: ${(err as Error).message.split('\n')[0]}`,
      { cause: err },
    );
  }
  // An empty YAML file is a file with nothing set.
  const input = data ?? {};
  const result = ConfigFile.safeParse(input);
  if (!result.success) {
    // A union reports "Invalid input" for a plan or guard object that fails: name its own problems instead, as the
    // plan and guard files get them.
    const issues = result.error.issues.flatMap((issue) => {
      const key = issue.path[0];
      if (issue.code !== 'invalid_union' || issue.path.length !== 1 || (key !== 'plan' && key !== 'guards'))
        return [issue];
      const value = (input as Record<string, unknown>)[key];
      if (typeof value !== 'object' || value === null) return [issue];
      const own = (key === 'plan' ? FaultPlan : GuardConfigSchema).safeParse(value);
      return own.success ? [issue] : own.error.issues.map((i) => ({ ...i, path: [key, ...i.path] }));
    });
    const error = new z.ZodError(issues);
    throw new FaultlineInputError(
      'FAULTLINE_CONFIG_INVALID',
      `invalid configuration file ${file}:\n${z.prettifyError(error)}`,
      { details: issues },
    );
  }
  return result.data;
}

/** The published JSON Schema (src/config.schema.json): 2-space JSON with a trailing newline. */
export function configJsonSchemaText(): string {
  return JSON.stringify(z.toJSONSchema(ConfigFile, { io: 'input' }), null, 2) + '\n';
}
