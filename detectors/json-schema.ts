/**
 * A small JSON Schema validator for the subset tool definitions and message contracts use: type (incl. type
 * arrays and "null"), properties, required, additionalProperties, enum, const, items (incl. tuple form), anyOf /
 * oneOf / allOf, min/max (Length, imum, Items, Properties), exclusive bounds, pattern and local `$ref` into
 * `$defs` / `definitions`. Unknown keywords (format, description, strict, …) are ignored, as lenient validators do.
 *
 * Compiled once per schema object (WeakMap cache) into a tree of closures, so validating a tool call costs a few
 * property reads. No dependency (Ajv is not installed; zod's `fromJSONSchema` is marked semi-experimental).
 */

export interface SchemaIssue {
  /** JSON-path-like location: `$`, `$.city`, `$.items[2]`. */
  path: string;
  keyword: string;
  message: string;
}

type Check = (value: unknown, path: string, out: SchemaIssue[]) => void;

const cache = new WeakMap<object, Check>();
const MAX_ISSUES = 20;

/** Validate `value` against `schema`; returns the issues (empty = valid). Non-object schemas accept everything. */
export function validateJsonSchema(schema: unknown, value: unknown): SchemaIssue[] {
  const out: SchemaIssue[] = [];
  compileJsonSchema(schema)(value, '$', out);
  return out;
}

/** The compiled check for a schema object (cached per object identity). */
export function compileJsonSchema(schema: unknown): Check {
  if (typeof schema !== 'object' || schema === null) return accept;
  let check = cache.get(schema);
  if (!check) {
    check = compile(schema as Record<string, unknown>, schema as Record<string, unknown>, 0);
    cache.set(schema, check);
  }
  return check;
}

const accept: Check = () => {};

function typeOf(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v;
}

function typeMatches(t: string, v: unknown): boolean {
  const actual = typeOf(v);
  if (t === actual) return true;
  if (t === 'number' && actual === 'integer') return true;
  return false;
}

function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  for (const k of ka) if (!deepEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k])) return false;
  return true;
}

function resolveRef(root: Record<string, unknown>, ref: string): Record<string, unknown> | undefined {
  if (ref === '#') return root;
  if (!ref.startsWith('#/')) return undefined; // external refs are not followed
  let cur: unknown = root;
  for (const raw of ref.slice(2).split('/')) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (typeof cur !== 'object' || cur === null) return undefined;
    cur = (cur as Record<string, unknown>)[key];
  }
  return typeof cur === 'object' && cur !== null ? (cur as Record<string, unknown>) : undefined;
}

function push(out: SchemaIssue[], path: string, keyword: string, message: string): void {
  if (out.length < MAX_ISSUES) out.push({ path, keyword, message });
}

function compile(s: Record<string, unknown>, root: Record<string, unknown>, depth: number): Check {
  if (depth > 32) return accept; // pathological or recursive schemas: stop compiling, accept the rest
  const checks: Check[] = [];

  if (typeof s.$ref === 'string') {
    const target = resolveRef(root, s.$ref);
    if (target) {
      let compiled: Check | undefined;
      // Lazy: recursive schemas refer to themselves.
      checks.push((v, p, o) => (compiled ??= compile(target, root, depth + 1))(v, p, o));
    }
  }

  const types = typeof s.type === 'string' ? [s.type] : Array.isArray(s.type) ? s.type.map(String) : undefined;
  if (s.nullable === true && types && !types.includes('null')) types.push('null'); // OpenAPI 3.0 style
  if (types) {
    const label = types.join(' | ');
    checks.push((v, p, o) => {
      for (const t of types) if (typeMatches(t, v)) return;
      push(o, p, 'type', `expected ${label}, got ${typeOf(v)}`);
    });
  }

  if (Array.isArray(s.enum)) {
    const values = s.enum as unknown[];
    const prims = new Set(values.filter((x) => typeof x !== 'object' || x === null));
    checks.push((v, p, o) => {
      if (prims.has(v)) return;
      if (typeof v === 'object' && v !== null && values.some((x) => deepEqual(x, v))) return;
      push(o, p, 'enum', `not one of ${JSON.stringify(values).slice(0, 80)}`);
    });
  }
  if ('const' in s) {
    const c = s.const;
    checks.push((v, p, o) => {
      if (!deepEqual(v, c)) push(o, p, 'const', `expected ${JSON.stringify(c).slice(0, 40)}`);
    });
  }

  // Objects
  const props = typeof s.properties === 'object' && s.properties !== null ? (s.properties as Record<string, unknown>) : undefined;
  const required = Array.isArray(s.required) ? (s.required as unknown[]).map(String) : [];
  const propChecks = props ? Object.entries(props).map(([k, sub]) => [k, compileSub(sub, root, depth)] as const) : [];
  const known = new Set(props ? Object.keys(props) : []);
  const addl = s.additionalProperties;
  const addlCheck = typeof addl === 'object' && addl !== null ? compileSub(addl, root, depth) : undefined;
  const minProps = typeof s.minProperties === 'number' ? s.minProperties : undefined;
  const maxProps = typeof s.maxProperties === 'number' ? s.maxProperties : undefined;
  if (props || required.length > 0 || addl !== undefined || minProps !== undefined || maxProps !== undefined) {
    checks.push((v, p, o) => {
      if (typeof v !== 'object' || v === null || Array.isArray(v)) return;
      const obj = v as Record<string, unknown>;
      for (const k of required) if (!(k in obj)) push(o, `${p}.${k}`, 'required', `missing required property "${k}"`);
      for (const [k, c] of propChecks) if (k in obj && obj[k] !== undefined) c(obj[k], `${p}.${k}`, o);
      if (addl === false || addlCheck) {
        for (const k of Object.keys(obj)) {
          if (known.has(k)) continue;
          if (addl === false) push(o, `${p}.${k}`, 'additionalProperties', `unexpected property "${k}"`);
          else addlCheck!(obj[k], `${p}.${k}`, o);
        }
      }
      const n = Object.keys(obj).length;
      if (minProps !== undefined && n < minProps) push(o, p, 'minProperties', `fewer than ${minProps} properties`);
      if (maxProps !== undefined && n > maxProps) push(o, p, 'maxProperties', `more than ${maxProps} properties`);
    });
  }

  // Arrays
  if (s.items !== undefined || s.prefixItems !== undefined || s.minItems !== undefined || s.maxItems !== undefined) {
    const tuple = Array.isArray(s.prefixItems) ? s.prefixItems : Array.isArray(s.items) ? s.items : undefined;
    const tupleChecks = tuple ? tuple.map((t) => compileSub(t, root, depth)) : [];
    const rest = !Array.isArray(s.items) && typeof s.items === 'object' && s.items !== null ? compileSub(s.items, root, depth) : undefined;
    const minItems = typeof s.minItems === 'number' ? s.minItems : undefined;
    const maxItems = typeof s.maxItems === 'number' ? s.maxItems : undefined;
    checks.push((v, p, o) => {
      if (!Array.isArray(v)) return;
      for (let i = 0; i < v.length; i++) {
        const c = i < tupleChecks.length ? tupleChecks[i] : rest;
        if (c) c(v[i], `${p}[${i}]`, o);
      }
      if (minItems !== undefined && v.length < minItems) push(o, p, 'minItems', `fewer than ${minItems} items`);
      if (maxItems !== undefined && v.length > maxItems) push(o, p, 'maxItems', `more than ${maxItems} items`);
    });
  }

  // Strings
  const minLength = typeof s.minLength === 'number' ? s.minLength : undefined;
  const maxLength = typeof s.maxLength === 'number' ? s.maxLength : undefined;
  let pattern: RegExp | undefined;
  if (typeof s.pattern === 'string') {
    try {
      pattern = new RegExp(s.pattern, 'u');
    } catch {
      pattern = undefined; // an invalid pattern in the user's schema is not the response's fault
    }
  }
  if (minLength !== undefined || maxLength !== undefined || pattern) {
    checks.push((v, p, o) => {
      if (typeof v !== 'string') return;
      const len = [...v].length;
      if (minLength !== undefined && len < minLength) push(o, p, 'minLength', `shorter than ${minLength}`);
      if (maxLength !== undefined && len > maxLength) push(o, p, 'maxLength', `longer than ${maxLength}`);
      if (pattern && !pattern.test(v)) push(o, p, 'pattern', `does not match ${String(s.pattern).slice(0, 40)}`);
    });
  }

  // Numbers
  const min = typeof s.minimum === 'number' ? s.minimum : undefined;
  const max = typeof s.maximum === 'number' ? s.maximum : undefined;
  const xmin = typeof s.exclusiveMinimum === 'number' ? s.exclusiveMinimum : undefined;
  const xmax = typeof s.exclusiveMaximum === 'number' ? s.exclusiveMaximum : undefined;
  if (min !== undefined || max !== undefined || xmin !== undefined || xmax !== undefined) {
    checks.push((v, p, o) => {
      if (typeof v !== 'number') return;
      if (min !== undefined && v < min) push(o, p, 'minimum', `less than ${min}`);
      if (max !== undefined && v > max) push(o, p, 'maximum', `greater than ${max}`);
      if (xmin !== undefined && v <= xmin) push(o, p, 'exclusiveMinimum', `not greater than ${xmin}`);
      if (xmax !== undefined && v >= xmax) push(o, p, 'exclusiveMaximum', `not less than ${xmax}`);
    });
  }

  // Combinators
  if (Array.isArray(s.allOf)) for (const sub of s.allOf) checks.push(compileSub(sub, root, depth));
  for (const kw of ['anyOf', 'oneOf'] as const) {
    const list = s[kw];
    if (!Array.isArray(list) || list.length === 0) continue;
    const subs = list.map((sub) => compileSub(sub, root, depth));
    checks.push((v, p, o) => {
      let passing = 0;
      for (const c of subs) {
        const tmp: SchemaIssue[] = [];
        c(v, p, tmp);
        if (tmp.length === 0) passing++;
        if (kw === 'anyOf' && passing > 0) return;
      }
      if (passing === 0) push(o, p, kw, `matches none of the ${kw} alternatives`);
      else if (kw === 'oneOf' && passing > 1) push(o, p, kw, `matches ${passing} oneOf alternatives`);
    });
  }

  if (checks.length === 0) return accept;
  if (checks.length === 1) return checks[0]!;
  return (v, p, o) => {
    for (const c of checks) c(v, p, o);
  };
}

function compileSub(sub: unknown, root: Record<string, unknown>, depth: number): Check {
  if (sub === false) return (_v, p, o) => push(o, p, 'false', 'no value allowed');
  if (typeof sub !== 'object' || sub === null) return accept;
  return compile(sub as Record<string, unknown>, root, depth + 1);
}
