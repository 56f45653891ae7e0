/**
 * Credentials in URL query strings (`?key=` for Gemini, `?api-key=` for Azure, `?access_token=`, `?sig=` for SAS and
 * signed URLs, …) replaced by `REDACTED`, as the HTTP semantic conventions ask for `url.full` and `url.query`
 * ("query string values for AWSAccessKeyId, Signature, sig, X-Goog-Signature SHOULD be redacted by default"), widened
 * to the names people use for API keys and tokens. Keys, order and every other parameter stay as they were.
 */

/** Parameter names (lower-case, without `-`, `_`, `.`) that carry a credential whatever their suffix says. */
const EXACT = new Set(['sig', 'pwd', 'auth', 'authorization', 'jwt', 'session', 'sessionid', 'awsaccesskeyid', 'code']);
/** Endings of such names: `key`, `api_key`, `x-api-key`, `subscription-key`, `access_token`, `client_secret`, … */
const ENDINGS = ['key', 'token', 'secret', 'password', 'passwd', 'signature', 'credential', 'credentials'];

/** Whether a query parameter name carries a credential. */
export function isCredentialParam(name: string): boolean {
  const n = name.toLowerCase().replace(/[-_.]/g, '');
  return EXACT.has(n) || ENDINGS.some((e) => n.endsWith(e));
}

export const REDACTED = 'REDACTED';

/**
 * The query string (with its `?`, or empty) with credential values redacted; the input itself when nothing is. Works
 * on the raw text, so percent-encoding and the order of the other parameters are kept byte for byte.
 */
export function redactQuery(search: string): string {
  if (search.length < 2) return search;
  let changed = false;
  const parts = search
    .slice(1)
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      const rawName = eq < 0 ? pair : pair.slice(0, eq);
      let name = rawName;
      try {
        name = decodeURIComponent(rawName.replace(/\+/g, ' '));
      } catch {
        // keep the raw name: a malformed escape still gets judged by what it says
      }
      if (eq < 0 || !isCredentialParam(name) || pair.slice(eq + 1) === '') return pair;
      changed = true;
      return `${rawName}=${REDACTED}`;
    });
  return changed ? `?${parts.join('&')}` : search;
}

/** A URL string with its query credentials (and any `user:password@`) redacted; the input when there is none. */
export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  const at = url.indexOf('@');
  if (q < 0 && at < 0) return url;
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return url;
  }
  let changed = false;
  if (u.username || u.password) {
    if (u.username) u.username = REDACTED;
    if (u.password) u.password = REDACTED;
    changed = true;
  }
  const search = redactQuery(u.search);
  if (search !== u.search) {
    u.search = search;
    changed = true;
  }
  return changed ? u.toString() : url;
}
