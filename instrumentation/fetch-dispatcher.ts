/**
 * Node's fetch sends through its own bundled undici, which creates the process-wide dispatcher on first use. npm undici,
 * when first required while that slot is still empty, fills it with an Agent of its own: the application's fetch would
 * then run on a different HTTP client (another undici version, another connection pool) just because faultline was
 * loaded. Touching one of fetch's globals first makes Node create its own dispatcher, so the GenAI span layer chains
 * to exactly the client the application would have used. This module is imported before 'undici' (in the CommonJS
 * build, import order is require order).
 */
void (globalThis as { Headers?: unknown }).Headers;
