/**
 * The layers of faultline (docs/architecture.md), bottom to top, and the rule that keeps them: a module imports only
 * from its own layer or the layers below, and no import cycle exists anywhere. `npm run lint:deps` (part of
 * `npm run lint`) checks it; a violation names its rule (`upward-from-<layer>`, `no-circular`), the importing file
 * and the imported one (`-T err-long` adds the rule's reason).
 *
 * A file's layer is the first entry below whose pattern matches its path (most specific first inside a layer). The
 * patterns name folders where a folder is one layer, and single files where a folder still holds several.
 * Type-only imports count: a layer that needs a type from above is as tied to it as one that needs a value.
 */
const layers = [
  {
    name: 'base',
    comment: 'diag, errors, version, taxonomy, attribute names, context keys, JSON Schema, hashing, statistics, env',
    paths: [
      '^src/(diag|errors|version|taxonomy|failure-modes|duration|env|otlp-endpoint|hash|memo|stats|clock)\\.ts$',
      '^src/report/output\\.ts$',
      '^src/plan/rng\\.ts$',
      '^instrumentation/semconv\\.ts$',
      '^instrumentation/agents/declarations\\.ts$',
      '^detectors/json-schema\\.ts$',
    ],
  },
  {
    name: 'wire',
    comment: 'provider codecs, SSE, JSON streams, decompression, request bodies, forwarding, exchange and step types',
    paths: [
      '^src/wire/',
      '^instrumentation/(types|internal-types|exchange|request-body|json-body|forwarding-controller|deliver|redact-url)\\.ts$',
      '^instrumentation/providers/',
      '^instrumentation/agents/shape\\.ts$',
      '^detectors/(types|wire)\\.ts$',
    ],
  },
  {
    name: 'traces',
    comment: 'the trace model, its view and the readers (files, collectors, query backends)',
    paths: ['^src/traces/(?!collect-diagnose\\.ts$)'],
  },
  {
    name: 'observe',
    comment: 'instrumentation (spans around calls) and the pure detectors and monitors',
    paths: ['^instrumentation/', '^detectors/(?!guards/)'],
  },
  {
    name: 'act',
    comment: 'fault injection (plans, the catalog, the engine) and guards: the parts that change a call',
    paths: ['^src/(inject|plan|catalog)/', '^detectors/guards/'],
  },
  {
    name: 'analyse',
    comment: 'diagnosers, evaluation, reliability, campaigns, reports, the mock model',
    paths: [
      '^src/(diagnosers|evaluation|reliability|campaign|report|mock-model)/',
      '^src/traces/collect-diagnose\\.ts$',
    ],
  },
  {
    name: 'edge',
    comment: 'the runtime edge: configuration, start, the OTel SDK and exporters, register',
    paths: ['^src/(config|config-schema|start|sdk|register|exit-hooks|announce|parts)\\.m?ts$', '^src/exporters/'],
  },
  {
    name: 'apps',
    comment: 'the demo and example apps (workflows handed to campaigns by the CLI, never imported below)',
    paths: ['^examples/'],
  },
  {
    name: 'entry',
    comment: "the entries: the package's public modules (src/index.ts, src/api/) and the command line",
    paths: ['^src/index\\.ts$', '^src/api/', '^src/cli/'],
  },
];

const pattern = (paths) => paths.map((p) => `(${p})`).join('|');

/** Everything a layer's own patterns match, minus what an earlier (lower) layer already claimed. */
const claimed = [];
const members = layers.map((layer) => {
  const own = { path: pattern(layer.paths) };
  if (claimed.length > 0) own.pathNot = pattern(claimed);
  claimed.push(...layer.paths);
  return own;
});

const upward = layers.flatMap((layer, i) =>
  i === layers.length - 1
    ? []
    : [
        {
          name: `upward-from-${layer.name}`,
          severity: 'error',
          comment: `${layer.name} (${layer.comment}) imports only from itself and the layers below`,
          from: members[i],
          to: {
            path: pattern(layers.slice(i + 1).flatMap((l) => l.paths)),
            pathNot: pattern(layers.slice(0, i + 1).flatMap((l) => l.paths)),
          },
        },
      ],
);

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'an import cycle ties its modules into one',
      from: {},
      to: { circular: true },
    },
    {
      name: 'not-in-a-layer',
      severity: 'error',
      comment: 'every module of src, instrumentation, detectors and examples belongs to a layer',
      from: { path: '^(src|instrumentation|detectors|examples)/', pathNot: pattern(layers.flatMap((l) => l.paths)) },
      to: {},
    },
    ...upward,
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)node_modules/|\\.d\\.ts$' },
    includeOnly: '^(src|instrumentation|detectors|examples)/',
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
    },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
