/**
 * The shopping environment: a product catalogue with near-duplicate titles (so picking the right item matters), a
 * cart, and checkout. Tools are real functions over this state; the evaluator reads the placed orders.
 */
import type { Json, Outcome, TaskDef, TaskFamily } from '../agents/family';

export interface Product {
  product_id: string;
  sku: string;
  title: string;
  price: number;
}

export const CATALOG: readonly Product[] = [
  { product_id: 'P-1001', sku: 'MUG-BLU-12', title: 'Blue Ceramic Mug', price: 12.5 },
  { product_id: 'P-1002', sku: 'MUG-BLU-16', title: 'Blue Ceramic Mug (16 oz)', price: 14 },
  { product_id: 'P-2001', sku: 'TEE-GRN-M', title: 'Green Cotton T-Shirt (M)', price: 19 },
  { product_id: 'P-2002', sku: 'TEE-GRN-L', title: 'Green Cotton T-Shirt (L)', price: 19 },
  { product_id: 'P-3001', sku: 'LMP-DSK-01', title: 'Desk Lamp', price: 34 },
  { product_id: 'P-3002', sku: 'LMP-DSK-PRO', title: 'Desk Lamp Pro', price: 59 },
  { product_id: 'P-4001', sku: 'MSE-WL-01', title: 'Wireless Mouse', price: 25 },
];

export interface ShoppingTask extends TaskDef {
  product: string;
  quantity: number;
}

const task = (id: string, product: string, quantity: number): ShoppingTask => ({
  id,
  product,
  quantity,
  text: `Add exactly ${quantity} units of "${product}" to the cart, make sure the cart holds exactly that, and place the order.`,
});

export const SHOPPING_TASKS: readonly ShoppingTask[] = [
  task('shop-mug', 'Blue Ceramic Mug', 3),
  task('shop-lamp', 'Desk Lamp', 2),
  task('shop-tee', 'Green Cotton T-Shirt (M)', 4),
  task('shop-mouse', 'Wireless Mouse', 1),
];

export interface Order {
  lines: { product_id: string; sku: string; quantity: number }[];
}

export class Store {
  readonly cart = new Map<string, number>();
  readonly orders: Order[] = [];

  search(query: string): Product[] {
    const q = query.toLowerCase();
    return CATALOG.filter((p) => p.title.toLowerCase().includes(q));
  }

  add(productId: string, quantity: number): Json {
    const p = CATALOG.find((c) => c.product_id === productId);
    if (!p) return { error: `unknown product ${productId}` };
    this.cart.set(productId, (this.cart.get(productId) ?? 0) + quantity);
    return {
      ok: true,
      product_id: productId,
      sku: p.sku,
      quantity_added: quantity,
      cart_quantity: this.cart.get(productId),
    };
  }

  view(): Json {
    const items = [...this.cart].map(([id, quantity]) => {
      const p = CATALOG.find((c) => c.product_id === id) as Product;
      return { product_id: id, sku: p.sku, title: p.title, quantity };
    });
    return { items };
  }

  /** Place the order, provided the cart holds exactly the confirmed line (the decision's sku × quantity). */
  checkout(sku: unknown, quantity: unknown): Json {
    const p = CATALOG.find((c) => c.sku === sku);
    if (!p) return { error: `no product with sku ${String(sku)}` };
    if (typeof quantity !== 'number' || this.cart.size !== 1 || this.cart.get(p.product_id) !== quantity)
      return { error: 'the cart does not match the confirmed order' };
    this.orders.push({ lines: [{ product_id: p.product_id, sku: p.sku, quantity }] });
    this.cart.clear();
    return { ok: true, order: this.orders.length };
  }
}

const int = (v: unknown): number | undefined => (Number.isInteger(v) && (v as number) > 0 ? (v as number) : undefined);

export const shopping: TaskFamily<ShoppingTask, Store> = {
  name: 'shopping',
  tasks: SHOPPING_TASKS,
  tools: [
    fn('search_product', 'Search the catalogue by title.', { query: { type: 'string' } }, ['query']),
    fn(
      'add_to_cart',
      'Add a quantity of a product to the cart.',
      { product_id: { type: 'string' }, quantity: { type: 'integer', minimum: 1 } },
      ['product_id', 'quantity'],
    ),
    fn('view_cart', 'Show the cart contents.', {}, []),
  ],
  actions: new Set(['add_to_cart']),
  createEnv: () => new Store(),
  runTool(store, _task, name, args) {
    switch (name) {
      case 'search_product':
        if (typeof args.query !== 'string') return { error: 'invalid arguments: query must be a string' };
        return { results: store.search(args.query) };
      case 'add_to_cart': {
        const q = int(args.quantity);
        if (typeof args.product_id !== 'string' || q === undefined)
          return { error: 'invalid arguments: product_id string and quantity ≥ 1 required' };
        return store.add(args.product_id, q);
      }
      case 'view_cart':
        return store.view();
      default:
        return { error: `invalid arguments: unknown tool ${name}` };
    }
  },
  commit(store, decision) {
    const order = (decision.order ?? {}) as Json;
    return store.checkout(order.sku, order.quantity);
  },
  reobserve(store, t) {
    const p = CATALOG.find((c) => c.title === t.product);
    const observed = p ? (store.cart.get(p.product_id) ?? 0) : 0;
    return {
      product_title: p?.title ?? t.product,
      product_id: p?.product_id ?? '',
      sku: p?.sku ?? '',
      requested_quantity: t.quantity,
      observed_quantity: observed,
      cart_verified: observed === t.quantity && store.cart.size === 1,
    };
  },
  snapshot: (store) => ({ cart: [...store.cart], orders: structuredClone(store.orders) }),
  restore(store, snap) {
    store.cart.clear();
    for (const [id, q] of (snap.cart as Array<[string, number]>) ?? []) store.cart.set(id, q);
    store.orders.splice(0, store.orders.length, ...((snap.orders as Order[]) ?? []));
  },
  evidenceFields: {
    task_id: 'string',
    product_title: 'string',
    product_id: 'string',
    sku: 'string',
    requested_quantity: 'integer',
    observed_quantity: 'integer',
    cart_verified: 'boolean',
  },
  evaluate(store, t): Outcome {
    const p = CATALOG.find((c) => c.title === t.product);
    if (store.orders.length === 0) return { success: false, reason: 'no order was placed' };
    if (store.orders.length > 1) return { success: false, reason: `${store.orders.length} orders were placed` };
    const lines = store.orders[0].lines;
    const ok = lines.length === 1 && lines[0].product_id === p?.product_id && lines[0].quantity === t.quantity;
    return ok
      ? { success: true, reason: `ordered ${t.quantity} × ${t.product}` }
      : { success: false, reason: `ordered ${lines.map((l) => `${l.quantity} × ${l.sku}`).join(', ')}` };
  },
};

function fn(name: string, description: string, properties: Json, required: string[]) {
  return {
    type: 'function' as const,
    function: { name, description, parameters: { type: 'object', properties, required, additionalProperties: false } },
  };
}
