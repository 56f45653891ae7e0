/**
 * Short content hashes, one rule wherever faultline names a payload by its digest: the first 16 hex characters of its
 * sha256 — enough to tell payloads apart, short on a span. At the base of the layers (docs/architecture.md).
 */
import { createHash } from 'node:crypto';

/** The first 16 hex characters of the sha256 of `data`. */
export function sha256Hex16(data: string | Buffer): string {
  return createHash('sha256').update(data).digest('hex').slice(0, 16);
}
