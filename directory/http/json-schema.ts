/**
 * JSON Schema from superstruct structs, so the record and envelope schemas that `/openapi.json`
 * and the MCP tools publish come from the structs that check the data.
 *
 * Superstruct keeps a struct's kind and its fields (`type`, `schema`) but hides refinements
 * (patterns, sizes) and the value type of a `record` inside closures. What cannot be read is
 * added with `annotate(struct, extra)`; whether a member may be absent or null is found by
 * asking the struct itself (`is(undefined)`, `is(null)`). A kind the converter does not know is
 * an error, never a silently empty schema.
 */
import type { Struct } from 'superstruct';
import type { JsonSchema } from './params.ts';

// biome-ignore lint/suspicious/noExplicitAny: Struct is invariant in both parameters, so only `any` admits every struct.
type AnyStruct = Struct<any, any>;

const EXTRA = new WeakMap<AnyStruct, JsonSchema>();

/** Records what superstruct cannot show about `struct` (a pattern, a record's value schema). Returns `struct`. */
export function annotate<S extends AnyStruct>(struct: S, extra: JsonSchema): S {
  EXTRA.set(struct, { ...EXTRA.get(struct), ...extra });
  return struct;
}

/** Names under which some structs are published once (`$ref`) instead of inline. */
export type SchemaRefs = ReadonlyMap<AnyStruct, string>;

/**
 * The JSON Schema (2020-12 vocabulary, as OpenAPI 3.1 uses) of `struct`. A member or item whose
 * struct is in `refs` becomes a `$ref` to it.
 */
export function structSchema(struct: AnyStruct, refs: SchemaRefs = new Map()): JsonSchema {
  const base = baseSchema(struct, refs);
  const extra = EXTRA.get(struct) ?? {};
  const schema: JsonSchema = { ...base, ...extra };
  if (struct.type !== 'literal' && struct.is(null) && typeof schema.type === 'string') {
    schema.type = [schema.type, 'null'];
  }
  return schema;
}

function member(struct: AnyStruct, refs: SchemaRefs): JsonSchema {
  const ref = refs.get(struct);
  return ref === undefined ? structSchema(struct, refs) : { $ref: ref };
}

function baseSchema(struct: AnyStruct, refs: SchemaRefs): JsonSchema {
  switch (struct.type) {
    case 'string':
      return { type: 'string' };
    case 'number':
      return { type: 'number' };
    case 'integer':
      return { type: 'integer' };
    case 'boolean':
      return { type: 'boolean' };
    case 'literal':
      if (struct.is(null)) return { type: 'null' };
      if (struct.schema === null) break;
      return { const: struct.schema };
    case 'enums':
      return { type: 'string', enum: Object.values(struct.schema as Record<string, string>) };
    case 'array':
      return struct.schema ? { type: 'array', items: member(struct.schema as AnyStruct, refs) } : { type: 'array' };
    case 'object':
    case 'type': {
      const fields = struct.schema as Record<string, AnyStruct>;
      const properties: Record<string, JsonSchema> = {};
      const required: string[] = [];
      for (const [name, field] of Object.entries(fields)) {
        properties[name] = member(field, refs);
        if (!field.is(undefined)) required.push(name);
      }
      return {
        type: 'object',
        properties,
        ...(required.length > 0 ? { required } : {}),
        // `object` refuses unknown members, `type` lets them through.
        ...(struct.type === 'object' ? { additionalProperties: false } : {}),
      };
    }
    case 'record':
      if (EXTRA.has(struct)) return { type: 'object' };
      break;
  }
  if (EXTRA.has(struct)) return {};
  throw new TypeError(`no JSON Schema for a superstruct "${struct.type}" without annotate()`);
}
