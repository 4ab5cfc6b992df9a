/**
 * JSON request bodies, read strictly, for every fetch-style service of the project. JSON.parse
 * loses two things a body's reader must see:
 *
 * - a member name given twice in one object: JSON.parse keeps the last, so
 *   `{"amount": "1", "amount": "1000"}` would pay 1000 where a proxy or a log read 1. Refused here
 *   (DuplicateMemberError), as a form field given twice is.
 * - how a number was written: `1.0` and `1e3` come out as the integers 1 and 1000. Numbers written
 *   with a fraction or an exponent are noted, so a field that takes a JSON integer (an amount, a
 *   count) can refuse them (`writtenAsFraction`) while a field that takes any number still does.
 *
 * The text is parsed by JSON.parse (its verdict and messages on malformed JSON are kept), then
 * scanned once, without recursion, for both, in time linear in its length whatever its depth.
 *
 * @example
 * const body = parseStrictJson('{"amount": 1.0}') as { amount: number };
 * writtenAsFraction(body, 'amount'); // true
 */
import { MeshError } from '../errors.ts';

/** An object of the body names one member twice; `path` is where (`messages.0.topic`). */
export class DuplicateMemberError extends MeshError {
  readonly path: string;

  constructor(path: string) {
    super('duplicate-member', `${path} is given more than once`);
    this.path = path;
  }
}

// Holders (objects and arrays of parsed bodies) and their members written with a fraction or an exponent.
const fractions = new WeakMap<object, Set<string>>();

/** Whether `holder[key]` is a number its body wrote with a fraction or an exponent (`1.0`, `1e3`). */
export function writtenAsFraction(holder: unknown, key: string | number): boolean {
  return typeof holder === 'object' && holder !== null && fractions.get(holder)?.has(String(key)) === true;
}

/** One open object or array of the scan: the parsed value it is, and the member names seen or the index reached. */
interface Frame {
  readonly holder: Record<string, unknown>;
  readonly names: Set<string> | undefined;
  /** The current member's name, or the current element's index. */
  key: string | number;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * `text` parsed as JSON (SyntaxError when it is not), refusing an object that names a member twice
 * (DuplicateMemberError) and noting numbers written with a fraction or an exponent.
 */
export function parseStrictJson(text: string): unknown {
  const value: unknown = JSON.parse(text);
  const stack: Frame[] = [];
  // The value an object or array opening now is: the root, or the current member of the one it is in.
  const opening = (): Record<string, unknown> => {
    const top = stack.at(-1);
    return (top === undefined ? value : top.holder[top.key]) as Record<string, unknown>;
  };
  // In an object, after `{` or `,`: the next string is a member name.
  let nameNext = false;
  for (let i = 0; i < text.length; ) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      const end = closingQuote(text, i);
      const top = stack.at(-1);
      if (nameNext && top?.names !== undefined) {
        const raw = text.slice(i + 1, end);
        const name = raw.includes('\\') ? (JSON.parse(text.slice(i, end + 1)) as string) : raw;
        top.key = name;
        if (top.names.has(name)) throw new DuplicateMemberError(pathOf(stack));
        top.names.add(name);
        nameNext = false;
      }
      i = end + 1;
    } else if (c === 0x7b /* { */) {
      stack.push({ holder: opening(), names: new Set(), key: '' });
      nameNext = true;
      i++;
    } else if (c === 0x5b /* [ */) {
      stack.push({ holder: opening(), names: undefined, key: 0 });
      i++;
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      stack.pop();
      i++;
    } else if (c === 0x2c /* , */) {
      const top = stack.at(-1)!;
      if (top.names === undefined) top.key = (top.key as number) + 1;
      else nameNext = true;
      i++;
    } else if (c === 0x2d /* - */ || (c >= 0x30 && c <= 0x39)) {
      let fraction = false;
      for (i++; i < text.length; i++) {
        const d = text.charCodeAt(i);
        if (d === 0x2e /* . */ || d === 0x65 /* e */ || d === 0x45 /* E */) fraction = true;
        else if (!((d >= 0x30 && d <= 0x39) || d === 0x2b /* + */ || d === 0x2d)) break;
      }
      const top = stack.at(-1);
      if (fraction && top !== undefined) note(top.holder, top.key);
    } else {
      // Whitespace, `:`, and the letters of true, false and null.
      i++;
    }
  }
  return value;
}

/** The index of the quote that closes the string opening at `open` (the text is valid JSON). */
function closingQuote(text: string, open: number): number {
  for (let at = open + 1; ; ) {
    const quote = text.indexOf('"', at);
    // Escaped when an odd number of backslashes stands before it.
    let before = quote - 1;
    while (text.charCodeAt(before) === BACKSLASH) before--;
    if ((quote - 1 - before) % 2 === 0) return quote;
    at = quote + 1;
  }
}

function pathOf(stack: readonly Frame[]): string {
  return stack.map((frame) => frame.key).join('.');
}

/** Notes `holder[key]` as a number written with a fraction or an exponent. */
function note(holder: object, key: string | number): void {
  let keys = fractions.get(holder);
  if (keys === undefined) fractions.set(holder, (keys = new Set()));
  keys.add(String(key));
}
