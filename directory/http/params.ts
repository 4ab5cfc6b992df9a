/**
 * Parameter definitions: one small description per parameter, from which come both the
 * superstruct validator the server runs and the JSON Schema that `/openapi.json` and the MCP tool
 * list publish. The two cannot disagree because neither is written by hand.
 *
 * @example
 * const limit = integerParam('limit', 'Page size.', { minimum: 1, maximum: 100, default: 20 });
 * const query = parseQuery([limit], new URLSearchParams('limit=5')); // { limit: 5 }
 * paramSchema(limit); // { type: 'integer', minimum: 1, maximum: 100, default: 20, description: … }
 */
import { coerce, enums, integer, max, min, pattern, refine, type Struct, string } from 'superstruct';
import { queryValues } from '../../core/web/query.ts';
import { type FieldError, ProblemError } from './problem.ts';

/** A JSON Schema object (the subset this project writes). */
export type JsonSchema = Record<string, unknown>;

interface ParamBase {
  readonly name: string;
  readonly description: string;
  /** Required parameters have no default; path parameters are always required. */
  readonly required: boolean;
}

/** A string parameter: a pattern, an enumeration, a length range, or a mix. */
export interface StringParam extends ParamBase {
  readonly type: 'string';
  readonly pattern?: RegExp;
  readonly enum?: readonly string[];
  readonly minLength: number;
  readonly maxLength: number;
}

/** An integer parameter within a range, with an optional default. */
export interface IntegerParam extends ParamBase {
  readonly type: 'integer';
  readonly minimum: number;
  readonly maximum: number;
  readonly default?: number;
}

export type ParamDef = StringParam | IntegerParam;

/** Defines a string parameter. Lengths default to 0..200 characters. */
export function stringParam(
  name: string,
  description: string,
  rules: { pattern?: RegExp; enum?: readonly string[]; minLength?: number; maxLength?: number; required?: boolean } = {},
): StringParam {
  return {
    type: 'string',
    name,
    description,
    required: rules.required ?? false,
    ...(rules.pattern ? { pattern: rules.pattern } : {}),
    ...(rules.enum ? { enum: rules.enum } : {}),
    minLength: rules.minLength ?? 0,
    maxLength: rules.maxLength ?? 200,
  };
}

/** Defines an integer parameter. Without `maximum` the bound is the largest safe integer. */
export function integerParam(
  name: string,
  description: string,
  rules: { minimum: number; maximum?: number; default?: number; required?: boolean },
): IntegerParam {
  return {
    type: 'integer',
    name,
    description,
    required: rules.required ?? false,
    minimum: rules.minimum,
    maximum: rules.maximum ?? Number.MAX_SAFE_INTEGER,
    ...(rules.default !== undefined ? { default: rules.default } : {}),
  };
}

/** The rule of `def` in words, for error messages: "must be one of a, b". */
export function describeRule(def: ParamDef): string {
  if (def.type === 'integer') {
    return def.maximum === Number.MAX_SAFE_INTEGER
      ? `must be an integer of at least ${def.minimum}`
      : `must be an integer from ${def.minimum} to ${def.maximum}`;
  }
  if (def.enum) return `must be one of ${def.enum.join(', ')}`;
  const length = def.minLength > 0 ? `have ${def.minLength} to ${def.maxLength} characters` : `have at most ${def.maxLength} characters`;
  if (!def.pattern) return `must ${length}`;
  // A fixed-length pattern says the length itself.
  return def.minLength === def.maxLength ? `must match ${def.pattern.source}` : `must match ${def.pattern.source} and ${length}`;
}

// Query strings and path segments carry text, JSON (MCP arguments) carries numbers: the same
// rule reads an integer from decimal digits in the first and accepts only a number in the second.
const DECIMAL = /^-?[0-9]{1,16}$/;

function codePoints(text: string): number {
  let n = text.length;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        n--;
        i++;
      }
    }
  }
  return n;
}

/** Where values come from: `text` for query and path strings, `json` for parsed JSON. */
export type ValueSource = 'text' | 'json';

/** The superstruct validator of one parameter (a value that is present). */
export function paramStruct(def: ParamDef, source: ValueSource): Struct<unknown, unknown> {
  if (def.type === 'integer') {
    const bounded = max(min(integer(), def.minimum), def.maximum);
    const struct = source === 'text' ? coerce(bounded, string(), (text) => (DECIMAL.test(text) ? Number(text) : text)) : bounded;
    return struct as Struct<unknown, unknown>;
  }
  let struct: Struct<string, unknown> = def.enum ? (enums([...def.enum]) as Struct<string, unknown>) : string();
  if (def.pattern) struct = pattern(struct, def.pattern);
  // JSON Schema counts characters (code points), not UTF-16 units as superstruct's size() does.
  const { minLength, maxLength } = def;
  return refine(struct, 'length', (value) => {
    const length = codePoints(value);
    return length >= minLength && length <= maxLength;
  }) as Struct<unknown, unknown>;
}

/** The JSON Schema of one parameter's value. */
export function paramSchema(def: ParamDef): JsonSchema {
  if (def.type === 'integer') {
    return {
      type: 'integer',
      minimum: def.minimum,
      maximum: def.maximum,
      ...(def.default !== undefined ? { default: def.default } : {}),
      description: def.description,
    };
  }
  return {
    type: 'string',
    ...(def.enum ? { enum: [...def.enum] } : {}),
    ...(def.pattern ? { pattern: def.pattern.source } : {}),
    ...(def.minLength > 0 ? { minLength: def.minLength } : {}),
    maxLength: def.maxLength,
    description: def.description,
  };
}

/** The OpenAPI 3.1 parameter object of `def`. */
export function openApiParameter(def: ParamDef, location: 'query' | 'path'): JsonSchema {
  const { description, ...schema } = paramSchema(def);
  return { name: def.name, in: location, required: location === 'path' || def.required, description, schema };
}

// The names of a list of definitions, made once per list.
const namesOf = new WeakMap<readonly ParamDef[], ReadonlySet<string>>();

function knownNames(defs: readonly ParamDef[]): ReadonlySet<string> {
  let names = namesOf.get(defs);
  if (names === undefined) {
    names = new Set(defs.map((d) => d.name));
    namesOf.set(defs, names);
  }
  return names;
}

/** The JSON Schema of an object holding `defs` (an MCP tool's input schema). */
export function paramsSchema(defs: readonly ParamDef[]): JsonSchema {
  const properties: Record<string, JsonSchema> = {};
  for (const def of defs) properties[def.name] = paramSchema(def);
  const required = defs.filter((d) => d.required).map((d) => d.name);
  return { type: 'object', properties, ...(required.length > 0 ? { required } : {}), additionalProperties: false };
}

/**
 * Validates `values` against `defs` (coercing text to integers where `source` is `text`) and
 * returns them with defaults filled in. Throws a ProblemError naming every bad parameter:
 * `unknown-parameter` for a name `defs` does not hold, `invalid-parameter` for a value that
 * breaks its rule. `code` picks the problem for bad values (`invalid-body` for request bodies).
 */
export function validateParams<T>(
  defs: readonly ParamDef[],
  values: Record<string, unknown>,
  source: ValueSource,
  code: 'invalid-parameter' | 'invalid-body' = 'invalid-parameter',
): T {
  const known = knownNames(defs);
  const unknown = Object.keys(values).filter((name) => !known.has(name));
  if (unknown.length > 0) {
    const what = code === 'invalid-body' ? 'field' : 'parameter';
    throw new ProblemError(
      code === 'invalid-body' ? code : 'unknown-parameter',
      `unknown ${what}${unknown.length > 1 ? 's' : ''} ${unknown.map((n) => JSON.stringify(n)).join(', ')}; ${
        defs.length === 0 ? `this operation takes no ${what}s` : `this operation takes ${defs.map((d) => d.name).join(', ')}`
      }`,
      { errors: unknown.map((name) => ({ name, detail: `unknown ${what}` })) },
    );
  }
  // Each value given is checked by its own parameter's validator; one not given takes its
  // default. A request names two or three of the parameters: validating an object of all of them
  // cost more than the search.
  const out: Record<string, unknown> = {};
  const errors: FieldError[] = [];
  for (const def of defs) {
    const given = values[def.name];
    if (given === undefined) {
      if (def.required) errors.push({ name: def.name, detail: `${def.name} is required` });
      else if (def.type === 'integer' && def.default !== undefined) out[def.name] = def.default;
      continue;
    }
    const [failed, value] = source === 'text' && typeof given === 'string' ? textVerdict(def, given) : verdictOf(def, source, given);
    if (failed) errors.push({ name: def.name, detail: `${def.name} ${describeRule(def)}, got ${JSON.stringify(given)}` });
    else out[def.name] = value;
  }
  if (errors.length > 0) throw new ProblemError(code, errors.map((e) => e.detail).join('; '), { errors });
  return out as T;
}

// Verdicts on query values already seen, per parameter: a directory answers the same few values
// (countries, categories, page sizes) over and over, and superstruct's run costs more than the
// search it guards. A verdict is a pure function of the text; the values are strings and numbers.
// Only short texts are kept (no receipt token, which is longer, stays in memory), as a pass or a
// failure without superstruct's error, so the bound on memory is the count times 32 characters.
const TEXT_VERDICTS_KEPT = 1024;
const KEPT_TEXT_CHARS = 32;
const textVerdicts = new WeakMap<ParamDef, Map<string, Verdict>>();

/** A value's verdict: failed, or its value (a number for an integer parameter). */
type Verdict = readonly [failed: boolean, value: unknown];

function verdictOf(def: ParamDef, source: ValueSource, given: unknown): Verdict {
  const [error, value] = valueStruct(def, source).validate(given, { coerce: true });
  return [error !== undefined, value];
}

/** `verdictOf` a query value, kept for the next time when the text is short. */
function textVerdict(def: ParamDef, text: string): Verdict {
  const judge = (): Verdict => verdictOf(def, 'text', text);
  if (text.length > KEPT_TEXT_CHARS) return judge();
  let verdicts = textVerdicts.get(def);
  if (verdicts === undefined) textVerdicts.set(def, (verdicts = new Map()));
  let verdict = verdicts.get(text);
  if (verdict === undefined) {
    verdict = judge();
    if (verdicts.size >= TEXT_VERDICTS_KEPT) verdicts.clear();
    verdicts.set(text, verdict);
  }
  return verdict;
}

// The validator of one parameter, built once per definition: building one costs more than running it.
const valueStructs = { text: new WeakMap<ParamDef, Struct<unknown, unknown>>(), json: new WeakMap<ParamDef, Struct<unknown, unknown>>() };

function valueStruct(def: ParamDef, source: ValueSource): Struct<unknown, unknown> {
  let struct = valueStructs[source].get(def);
  if (struct === undefined) {
    struct = paramStruct(def, source);
    valueStructs[source].set(def, struct);
  }
  return struct;
}

/**
 * Reads a query string against `defs`: each parameter at most once (`repeated-parameter`
 * otherwise, from the kit's parser), no unknown names, every value within its rule.
 */
export function parseQuery<T>(defs: readonly ParamDef[], search: URLSearchParams): T {
  return validateParams<T>(defs, queryValues(search), 'text');
}
