/**
 * JSON Schema validation for tool definitions and message contracts, by Ajv (draft-07, 2019-09 and 2020-12, chosen
 * from the schema's `$schema`, else from the keywords it uses). `format` is an annotation here, as 2019-09 and
 * 2020-12 define it by default: a model's `"2024-13-01"` for a `date` is the application's to judge, and assertion
 * would need a format library the tool author never asked for.
 *
 * Compiled once per schema *content*: an application builds its tool schemas anew on every request, so a cache keyed
 * by object identity would compile on every call. The cache is bounded (least recently used compiled schemas are
 * dropped, and removed from Ajv's own cache with them). A schema Ajv cannot compile (a bad `$ref`, an invalid
 * pattern) is not the response's fault: it validates everything, and that outcome is cached too.
 *
 * Ajv is loaded on the first validation, not when faultline starts.
 */
import type { ErrorObject, ValidateFunction } from 'ajv';

export interface SchemaIssue {
  /** JSON-path-like location: `$`, `$.city`, `$.items[2]`. */
  path: string;
  keyword: string;
  message: string;
}

/** A compiled schema: the issues of `value` (empty = valid). */
export type CompiledSchema = (value: unknown) => SchemaIssue[];

type Draft = 'draft-07' | '2019-09' | '2020-12';
type AjvInstance = {
  compile(schema: object): ValidateFunction;
  removeSchema(schema: object): unknown;
};

const MAX_ISSUES = 20;
const MAX_COMPILED = 256;

const accept: CompiledSchema = () => [];

interface Entry {
  check: CompiledSchema;
  /** The instance that holds the compiled schema (to drop it on eviction), when one does. */
  ajv?: AjvInstance;
  schema?: object;
}

const byContent = new Map<string, Entry>();
// A schema object may be the application's (a guard route's): not written to, so a WeakMap (its values, the compiled
// checks, are shared by content and outlive the keys anyway).
// eslint-disable-next-line no-restricted-syntax
const byObject = new WeakMap<object, Entry>();
const shared = new Map<Draft, AjvInstance>();

/** Validate `value` against `schema`; returns the issues (empty = valid). Non-object schemas accept everything. */
export function validateJsonSchema(schema: unknown, value: unknown): SchemaIssue[] {
  return compileJsonSchema(schema)(value);
}

/** The compiled check for a schema (cached by content; `true`, `{}` and non-objects accept everything). */
export function compileJsonSchema(schema: unknown): CompiledSchema {
  if (schema === false) return () => [{ path: '$', keyword: 'false', message: 'no value allowed' }];
  if (typeof schema !== 'object' || schema === null) return accept;
  const known = byObject.get(schema);
  if (known) return known.check;
  const key = JSON.stringify(schema);
  let entry = byContent.get(key);
  if (entry) {
    // Refresh recency: Map iteration order is insertion order.
    byContent.delete(key);
  } else {
    entry = compile(schema, key);
    if (byContent.size >= MAX_COMPILED) evictOldest();
  }
  byContent.set(key, entry);
  byObject.set(schema, entry);
  return entry.check;
}

function evictOldest(): void {
  const oldest = byContent.keys().next();
  if (oldest.done === true) return;
  const entry = byContent.get(oldest.value);
  byContent.delete(oldest.value);
  if (entry?.ajv && entry.schema) {
    try {
      entry.ajv.removeSchema(entry.schema);
    } catch {
      // already gone
    }
  }
}

function draftOf(schema: object, text: string): Draft {
  const declared = (schema as { $schema?: unknown }).$schema;
  if (typeof declared === 'string') {
    if (declared.includes('2020-12')) return '2020-12';
    if (declared.includes('2019-09')) return '2019-09';
    if (/draft-0[4-7]/.test(declared)) return 'draft-07';
  }
  // Keywords only the newer drafts have; array-form `items` (a tuple) only draft-07 has.
  if (/"(prefixItems|\$dynamicRef|\$dynamicAnchor)"\s*:/.test(text)) return '2020-12';
  if (/"(unevaluatedProperties|unevaluatedItems|dependentRequired|dependentSchemas|\$recursiveRef)"\s*:/.test(text))
    return '2019-09';
  return 'draft-07';
}

function newAjv(draft: Draft): AjvInstance {
  const options = {
    strict: false,
    allErrors: true,
    logger: false as const,
    validateFormats: false,
    validateSchema: false,
  };
  if (draft === '2020-12') {
    const Ajv2020 = (require('ajv/dist/2020') as { default: new (o: object) => AjvInstance }).default;
    return new Ajv2020(options);
  }
  if (draft === '2019-09') {
    const Ajv2019 = (require('ajv/dist/2019') as { default: new (o: object) => AjvInstance }).default;
    return new Ajv2019(options);
  }
  const Ajv = (require('ajv') as { default: new (o: object) => AjvInstance }).default;
  return new Ajv(options);
}

function compile(schema: object, text: string): Entry {
  const draft = draftOf(schema, text);
  // Schemas naming an `$id` get an instance of their own: two different schemas may claim the same id.
  const hasId = /"\$id"\s*:/.test(text);
  let ajv = hasId ? undefined : shared.get(draft);
  if (ajv === undefined) {
    ajv = newAjv(draft);
    if (!hasId) shared.set(draft, ajv);
  }
  let validate: ValidateFunction;
  try {
    validate = ajv.compile(schema);
  } catch {
    return { check: accept };
  }
  const check: CompiledSchema = (value) => (validate(value) ? [] : issuesOf(validate.errors ?? []));
  return hasId ? { check } : { check, ajv, schema };
}

/** A JSON pointer (`/items/2/name`) as the path style the findings use (`$.items[2].name`). */
function pathOf(pointer: string, extra?: unknown): string {
  let out = '$';
  if (pointer !== '') {
    for (const raw of pointer.slice(1).split('/')) {
      const seg = raw.replace(/~1/g, '/').replace(/~0/g, '~');
      out += /^\d+$/.test(seg) ? `[${seg}]` : `.${seg}`;
    }
  }
  return typeof extra === 'string' ? `${out}.${extra}` : out;
}

/**
 * Ajv's errors as issues. An `anyOf`/`oneOf` failure is reported once, without the failures of each of its branches
 * (which Ajv lists too). Messages say what is wrong and where, never the value itself: evidence must not quote content.
 */
function issuesOf(errors: readonly ErrorObject[]): SchemaIssue[] {
  const combinators = errors
    .filter((e) => e.keyword === 'anyOf' || e.keyword === 'oneOf')
    .map((e) => `${e.schemaPath}/`);
  const out: SchemaIssue[] = [];
  for (const e of errors) {
    if (combinators.some((prefix) => e.schemaPath.startsWith(prefix))) continue;
    const params = e.params as Record<string, unknown>;
    switch (e.keyword) {
      case 'required':
      case 'dependentRequired':
      case 'dependencies':
        out.push({
          path: pathOf(e.instancePath, params.missingProperty),
          keyword: 'required',
          message: `missing required property "${String(params.missingProperty)}"`,
        });
        break;
      case 'additionalProperties':
        out.push({
          path: pathOf(e.instancePath, params.additionalProperty),
          keyword: e.keyword,
          message: `unexpected property "${String(params.additionalProperty)}"`,
        });
        break;
      case 'unevaluatedProperties':
        out.push({
          path: pathOf(e.instancePath, params.unevaluatedProperty),
          keyword: e.keyword,
          message: `unexpected property "${String(params.unevaluatedProperty)}"`,
        });
        break;
      case 'pattern':
        out.push({
          path: pathOf(e.instancePath),
          keyword: e.keyword,
          message: 'does not match the pattern its schema gives',
        });
        break;
      case 'enum':
        out.push({
          path: pathOf(e.instancePath),
          keyword: e.keyword,
          message: 'not one of the values its schema allows',
        });
        break;
      case 'const':
        out.push({ path: pathOf(e.instancePath), keyword: e.keyword, message: 'not the constant its schema gives' });
        break;
      case 'anyOf':
      case 'oneOf':
        out.push({
          path: pathOf(e.instancePath),
          keyword: e.keyword,
          message:
            e.keyword === 'oneOf' && Array.isArray(params.passingSchemas)
              ? 'matches more than one oneOf alternative'
              : `matches none of the ${e.keyword} alternatives`,
        });
        break;
      default:
        // Ajv's own messages name the keyword's limit ("must be <= 14", "must be string"), not the value.
        out.push({ path: pathOf(e.instancePath), keyword: e.keyword, message: e.message ?? `fails ${e.keyword}` });
    }
    if (out.length >= MAX_ISSUES) break;
  }
  return out;
}
