/**
 * Routes: which calls a guard protects. A route matches on provider, model, agent (A2A target / message target),
 * tool (MCP tool), boundary (I1–I4 or a user label), message source, and host; an omitted field matches anything.
 * Values may end in `*` for a prefix match (`gpt-4o*`).
 */
export interface RouteMatch {
  provider?: string;
  model?: string;
  agent?: string;
  tool?: string;
  boundary?: string;
  source?: string;
  host?: string;
}

/** What is known about one call or delivery, to match routes against: the same fields, as values. */
export type RouteFacts = RouteMatch;

function matchValue(pattern: string | undefined, value: string | undefined): boolean {
  if (pattern === undefined || pattern === '*') return true;
  if (value === undefined) return false;
  if (pattern.endsWith('*')) return value.startsWith(pattern.slice(0, -1));
  return pattern === value;
}

export function routeMatches(match: RouteMatch | undefined, facts: RouteFacts): boolean {
  if (!match) return true;
  return (
    matchValue(match.provider, facts.provider) &&
    matchValue(match.model, facts.model) &&
    matchValue(match.agent, facts.agent) &&
    matchValue(match.tool, facts.tool) &&
    matchValue(match.boundary, facts.boundary) &&
    matchValue(match.source, facts.source) &&
    matchValue(match.host, facts.host)
  );
}

/** The first route whose `match` accepts the facts. */
export function findRoute<R extends { match?: RouteMatch }>(
  routes: readonly R[] | undefined,
  facts: RouteFacts,
): R | undefined {
  return routes?.find((r) => routeMatches(r.match, facts));
}

/** A stable label for a route: its name, or its match fields. Used for health, circuits and span events. */
export function routeLabel(route: { name?: string; match?: RouteMatch }): string {
  if (route.name) return route.name;
  const m = route.match ?? {};
  const parts = Object.entries(m)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${k}=${String(v)}`);
  return parts.length > 0 ? parts.join(',') : '*';
}
