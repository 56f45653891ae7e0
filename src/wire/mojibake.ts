/**
 * Mojibake: UTF-8 bytes read as Latin-1 / Windows-1252 somewhere on the way (a proxy, a wrong charset header). A run of
 * high single-byte characters is confirmed by re-encoding it to the bytes it stands for and decoding them as strict
 * UTF-8 (the ftfy confirmation: a gate alone has false positives, the round-trip removes them). Read by the encoding
 * detector (detectors/encoding.ts) and by the content-free verdicts recorded at capture time
 * (instrumentation/providers/verdicts.ts).
 */

// Windows-1252 0x80–0x9F: the characters a cp1252 decoder produces for those bytes.
const CP1252 =
  '\u20ac\u0081\u201a\u0192\u201e\u2026\u2020\u2021\u02c6\u2030\u0160\u2039\u0152\u008d\u017d\u008f\u0090\u2018\u2019\u201c\u201d\u2022\u2013\u2014\u02dc\u2122\u0161\u203a\u0153\u009d\u017e\u0178';
const CP1252_BYTE = new Map<number, number>();
for (let i = 0; i < 32; i++) CP1252_BYTE.set(CP1252.charCodeAt(i), 0x80 + i);

/** Byte a char stands for when text was decoded as Latin-1 / cp1252, or -1. */
export function byteOf(code: number): number {
  if (code < 0x80) return -1;
  if (code <= 0xff) return code;
  return CP1252_BYTE.get(code) ?? -1;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });
// eslint-disable-next-line no-control-regex
const NON_ASCII = /[^\x00-\x7f]/;

/** Runs of high single-byte chars that decode as strict UTF-8 into fewer characters: confirmed mojibake runs. */
export function mojibakeRuns(text: string): string[] {
  // Plain ASCII has no high byte to stand for: one native scan instead of a lookup per character.
  if (!NON_ASCII.test(text)) return [];
  const found: string[] = [];
  let start = -1;
  const flush = (end: number) => {
    if (start >= 0 && end - start >= 2) {
      const run = text.slice(start, end);
      const bytes = new Uint8Array(run.length);
      for (let i = 0; i < run.length; i++) bytes[i] = byteOf(run.charCodeAt(i));
      try {
        const decoded = utf8.decode(bytes);
        if (decoded.length < run.length) found.push(run);
      } catch {
        /* not UTF-8: legitimate accented text */
      }
    }
    start = -1;
  };
  for (let i = 0; i < text.length; i++) {
    const b = byteOf(text.charCodeAt(i));
    if (b >= 0) {
      if (start < 0) start = i;
    } else flush(i);
  }
  flush(text.length);
  return found;
}
