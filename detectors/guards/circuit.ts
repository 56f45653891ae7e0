/**
 * A circuit breaker per route: closed (normal) → open after `failureThreshold` consecutive failures, or when the
 * route's health falls under `minHealth` with enough history → half-open after `coolDownMs`, where up to
 * `halfOpenProbes` calls go through as probes → closed on a probe success, open again on a probe failure.
 * (ARCF's circuit-breaker isolation, with toxiproxy-style explicit states.)
 */
export type CircuitState = 'closed' | 'open' | 'half_open';

export interface CircuitPolicy {
  failureThreshold?: number;
  coolDownMs?: number;
  halfOpenProbes?: number;
  /** Also open when the route health score is below this (after at least `failureThreshold` calls). */
  minHealth?: number;
}

export type CircuitTransition = { from: CircuitState; to: CircuitState } | undefined;

export class CircuitBreaker {
  state: CircuitState = 'closed';
  #failures = 0;
  #openedAt = 0;
  #probesInFlight = 0;
  readonly #threshold: number;
  readonly #coolDown: number;
  readonly #probes: number;

  constructor(
    policy: CircuitPolicy = {},
    private readonly now: () => number = Date.now,
  ) {
    this.#threshold = policy.failureThreshold ?? 5;
    this.#coolDown = policy.coolDownMs ?? 30_000;
    this.#probes = policy.halfOpenProbes ?? 1;
  }

  /** May a call go through now? Moves open → half-open when the cool-down has passed. */
  admit(): { allowed: boolean; transition: CircuitTransition } {
    if (this.state === 'open') {
      if (this.now() - this.#openedAt < this.#coolDown) return { allowed: false, transition: undefined };
      this.state = 'half_open';
      this.#probesInFlight = 1;
      return { allowed: true, transition: { from: 'open', to: 'half_open' } };
    }
    if (this.state === 'half_open') {
      if (this.#probesInFlight >= this.#probes) return { allowed: false, transition: undefined };
      this.#probesInFlight++;
      return { allowed: true, transition: undefined };
    }
    return { allowed: true, transition: undefined };
  }

  onSuccess(): CircuitTransition {
    this.#failures = 0;
    if (this.state === 'half_open') {
      this.state = 'closed';
      this.#probesInFlight = 0;
      return { from: 'half_open', to: 'closed' };
    }
    return undefined;
  }

  onFailure(health = 1, minHealth?: number, calls = 0): CircuitTransition {
    this.#failures++;
    if (this.state === 'half_open') return this.#open('half_open');
    if (this.state === 'closed') {
      const unhealthy = minHealth !== undefined && calls >= this.#threshold && health < minHealth;
      if (this.#failures >= this.#threshold || unhealthy) return this.#open('closed');
    }
    return undefined;
  }

  /** ms until an open circuit half-opens (0 when not open). */
  retryInMs(): number {
    return this.state === 'open' ? Math.max(0, this.#coolDown - (this.now() - this.#openedAt)) : 0;
  }

  #open(from: CircuitState): CircuitTransition {
    this.state = 'open';
    this.#openedAt = this.now();
    this.#probesInFlight = 0;
    return { from, to: 'open' };
  }
}

/** Circuit breakers by route label. */
export class Circuits {
  readonly #byRoute = new Map<string, CircuitBreaker>();
  constructor(private readonly now: () => number = Date.now) {}
  get(route: string, policy: CircuitPolicy | undefined): CircuitBreaker {
    let c = this.#byRoute.get(route);
    if (!c) this.#byRoute.set(route, (c = new CircuitBreaker(policy, this.now)));
    return c;
  }
  peek(route: string): CircuitBreaker | undefined {
    return this.#byRoute.get(route);
  }
}
