/**
 * The two JSON helpers AgentChaos's behaviour depends on: Python's `json.dumps(ensure_ascii=False)` spacing (so
 * re-serialised tool arguments match the Python engine byte for byte) and its `$.a[0].b` JSON paths.
 */

/** `json.dumps(value, ensure_ascii=False)`: `", "` and `": "` separators, non-ASCII characters kept. */
export function pyDumps(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (Array.isArray(value)) return `[${value.map(pyDumps).join(', ')}]`;
  if (typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>);
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}: ${pyDumps(v)}`).join(', ')}}`;
  }
  if (typeof value === 'number' && !Number.isFinite(value))
    return value > 0 ? 'Infinity' : value < 0 ? '-Infinity' : 'NaN';
  return JSON.stringify(value);
}

type Token = string | number;

/** Parse `$.choices[0].message.content` into tokens. */
export function parsePath(path: string): Token[] {
  if (path === '$') return [];
  if (!path.startsWith('$')) throw new Error(`JSON path must start with $: ${path}`);
  const tokens: Token[] = [];
  const re = /\.([^.[\]]+)|\[(\d+)\]/g;
  let m: RegExpExecArray | null;
  let last = 1;
  while ((m = re.exec(path)) !== null) {
    if (m.index !== last) throw new Error(`bad JSON path: ${path}`);
    tokens.push(m[1] !== undefined ? m[1] : Number(m[2]));
    last = re.lastIndex;
  }
  if (last !== path.length) throw new Error(`bad JSON path: ${path}`);
  return tokens;
}

/** `jp_get`: undefined when any step is missing. */
export function jpGet(root: unknown, path: string): unknown {
  let cur: unknown = root;
  for (const t of parsePath(path)) {
    if (cur === null || typeof cur !== 'object') return undefined;
    if (typeof t === 'number') {
      if (!Array.isArray(cur) || t >= cur.length) return undefined;
      cur = cur[t];
    } else {
      if (Array.isArray(cur)) return undefined;
      cur = (cur as Record<string, unknown>)[t];
    }
  }
  return cur;
}

/** `jp_set`: silently does nothing when the parent is unreachable. Returns whether it wrote. */
export function jpSet(root: unknown, path: string, value: unknown): boolean {
  const tokens = parsePath(path);
  if (tokens.length === 0) return false;
  const parent = jpGet(root, tokensToPath(tokens.slice(0, -1)));
  const last = tokens[tokens.length - 1];
  if (parent === null || typeof parent !== 'object') return false;
  if (typeof last === 'number') {
    if (!Array.isArray(parent) || last >= parent.length) return false;
    parent[last] = value;
  } else {
    if (Array.isArray(parent)) return false;
    (parent as Record<string, unknown>)[last] = value;
  }
  return true;
}

function tokensToPath(tokens: Token[]): string {
  return '$' + tokens.map((t) => (typeof t === 'number' ? `[${t}]` : `.${t}`)).join('');
}

export function clone<T>(v: T): T {
  return v === undefined ? v : (JSON.parse(JSON.stringify(v)) as T);
}
