/**
 * Route health: the recent success rate of each route (a sliding window of outcomes), exported as the observable
 * gauge `faultline.route.health` through the global MeterProvider. The circuit breaker, retry back-off (ARCF's
 * adaptive factor) and fallback choice read it.
 */
import { metrics, type ObservableGauge } from '@opentelemetry/api';
import { ATTR_FL_GUARD_ROUTE, METRIC_FL_ROUTE_HEALTH } from '../../instrumentation/semconv';
import { VERSION } from '../../src/version';

export class RouteHealth {
  readonly #window: number;
  readonly #outcomes = new Map<string, boolean[]>();
  #gauge: ObservableGauge | undefined;

  constructor(window = 50) {
    this.#window = window;
  }

  record(route: string, ok: boolean): void {
    let w = this.#outcomes.get(route);
    if (!w) this.#outcomes.set(route, (w = []));
    w.push(ok);
    if (w.length > this.#window) w.shift();
  }

  /** Recent success rate in 0..1; 1 for a route with no history (innocent until proven otherwise). */
  score(route: string): number {
    const w = this.#outcomes.get(route);
    if (!w || w.length === 0) return 1;
    let ok = 0;
    for (const x of w) if (x) ok++;
    return ok / w.length;
  }

  /** Outcomes in the window. */
  count(route: string): number {
    return this.#outcomes.get(route)?.length ?? 0;
  }

  routes(): string[] {
    return [...this.#outcomes.keys()];
  }

  /** Export the scores as `faultline.route.health{faultline.guard.route}` (idempotent). */
  exportMetric(): void {
    if (this.#gauge) return;
    const meter = metrics.getMeter('faultline', VERSION);
    this.#gauge = meter.createObservableGauge(METRIC_FL_ROUTE_HEALTH, {
      description: 'Recent success rate of a guarded route (0..1)',
      unit: '1',
    });
    this.#gauge.addCallback((result) => {
      for (const r of this.#outcomes.keys()) result.observe(this.score(r), { [ATTR_FL_GUARD_ROUTE]: r });
    });
  }
}
