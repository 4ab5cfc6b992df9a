/**
 * The query string as one value per name, for every service: a name given twice is refused (every
 * parameter takes one value), and so, when the route names what it takes, is a name it does not
 * take (a misspelt `limt` must not silently mean the default). Validating each value is the
 * route's business (or a service's schema on top of this, as the directory's).
 *
 * @example
 * const query = queryValues(url.searchParams, { allowed: ['limit', 'before'] });
 * query.limit; // '5' or undefined
 */
import { WebProblem } from './problem.ts';

export interface QueryOptions {
  /** The names the route takes; omitted: any name (the caller checks them). */
  readonly allowed?: readonly string[];
  /** The problem a repeated name gets. Default `repeated-parameter`. */
  readonly repeated?: 'repeated-parameter' | 'invalid-parameter';
}

function quoted(names: readonly string[]): string {
  return names.map((name) => JSON.stringify(name)).join(', ');
}

/**
 * The query's values by name, in an object without a prototype (so `__proto__` is a name like any
 * other). Throws the 400 problem naming every repeated name, then every unknown one.
 */
export function queryValues(search: URLSearchParams, options: QueryOptions = {}): Record<string, string> {
  const values: Record<string, string> = Object.create(null);
  const repeated = new Set<string>();
  for (const [name, value] of search) {
    if (Object.hasOwn(values, name)) repeated.add(name);
    values[name] = value;
  }
  if (repeated.size > 0) {
    const names = [...repeated];
    throw new WebProblem(options.repeated ?? 'repeated-parameter', `${quoted(names)} given more than once; each parameter takes one value`, {
      errors: names.map((name) => ({ name, detail: 'given more than once' })),
    });
  }
  const allowed = options.allowed;
  if (allowed !== undefined) {
    const unknown = Object.keys(values).filter((name) => !allowed.includes(name));
    if (unknown.length > 0) {
      const takes = allowed.length === 0 ? 'this operation takes no parameters' : `this operation takes ${allowed.join(', ')}`;
      throw new WebProblem('unknown-parameter', `unknown parameter${unknown.length > 1 ? 's' : ''} ${quoted(unknown)}; ${takes}`, {
        errors: unknown.map((name) => ({ name, detail: 'unknown parameter' })),
      });
    }
  }
  return values;
}
