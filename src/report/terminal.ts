/**
 * What the CLI puts on a terminal, made safe in one place. Span names, models, error types, status messages and
 * evidence come from traces, which an untrusted producer may have written (or `collect` received): an ESC or BEL
 * sequence in one (OSC 0 retitles the terminal, OSC 52 writes the clipboard, `ESC[2J` clears it) would act on the
 * user's terminal if printed raw. And a URL the CLI prints (an endpoint in an error line) may carry `user:password@`
 * or a token in its query.
 *
 * `guardTerminal` wraps the CLI process's stdout and stderr once (src/cli/index.ts), so every line of every command
 * passes `terminalText`: C0 and C1 control characters and DEL become visible `\x1b`-style escapes (newline and tab
 * are layout and stay), and every URL loses its user-info and secret query values (instrumentation/redact-url.ts,
 * the one redaction function). The only control sequences kept are the ones faultline itself writes: the colours of
 * report/colors.ts and the progress line's `\r ESC[2K`. JSON output is unaffected: JSON escapes controls itself.
 */
import { redactUrl } from '../../instrumentation/redact-url';
import { useColors } from './colors';

/** Exactly the sequences faultline writes itself (colors.ts, progress.ts). */
// eslint-disable-next-line no-control-regex
const OURS = /\r\u001b\[2K|\u001b\[(?:1|2|22|31|32|33|39)m/y;
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;
const URL_RE = /[a-z][a-z0-9+.-]*:\/\/[^\s"'<>`]+/gi;

function escapeControls(s: string, keepOurs: boolean): string {
  if (!CONTROL.test(s)) return s;
  let out = '';
  for (let i = 0; i < s.length; i++) {
    if (keepOurs) {
      OURS.lastIndex = i;
      const m = OURS.exec(s);
      if (m) {
        out += m[0];
        i += m[0].length - 1;
        continue;
      }
    }
    const c = s.charCodeAt(i);
    out += CONTROL.test(s[i]!) ? `\\x${c.toString(16).padStart(2, '0')}` : s[i];
  }
  return out;
}

/**
 * `s` fit for a terminal: controls escaped (except newline and tab), URLs without credentials. `keepOurs`: leave
 * faultline's own colour and progress sequences (for a stream we write colours to).
 */
export function terminalText(s: string, keepOurs = false): string {
  const safe = escapeControls(s, keepOurs);
  return safe.includes('://') ? safe.replace(URL_RE, (u) => redactUrl(u)) : safe;
}

type Write = NodeJS.WriteStream['write'];
const GUARDED = Symbol.for('faultline.terminalGuard');

/** Route every string written to `stream` through `terminalText` (Buffers pass unchanged). Idempotent. */
export function guardTerminal(stream: NodeJS.WriteStream): void {
  const s = stream as NodeJS.WriteStream & { [GUARDED]?: true };
  if (s[GUARDED]) return;
  s[GUARDED] = true;
  const write = stream.write.bind(stream) as (...args: unknown[]) => boolean;
  stream.write = ((chunk: unknown, ...rest: unknown[]) =>
    write(typeof chunk === 'string' ? terminalText(chunk, useColors(stream)) : chunk, ...rest)) as Write;
}
