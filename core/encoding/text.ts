/** Text bounded in bytes: what a peer or an engine says is cut to fit a wire bound. */
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * `text` cut to at most `maxBytes` of UTF-8, at a code point boundary (a cut never leaves half a
 * character).
 */
export function clip(text: string, maxBytes: number): string {
  const bytes = encoder.encode(text);
  if (bytes.length <= maxBytes) return text;
  let end = maxBytes;
  // Back up over continuation bytes (10xxxxxx) to the start of the character that does not fit.
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  return decoder.decode(bytes.subarray(0, end));
}
