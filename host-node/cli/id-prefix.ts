/**
 * Ids given by their first characters, as the tables show them (`mesh jobs ls`, `mesh channel ls`,
 * `mesh tunnel ls`): one parser and one rule for every command that names something the running
 * node holds. A prefix names the one id that starts with it; none or several is exit 1, saying which.
 */
import { NodeClientError } from './client.ts';
import { type Parser, UsageError } from './command.ts';

/** How many of the ids a prefix matches an ambiguity lists, by their first 16 characters as the tables show them. */
const LISTED = 4;

/** An id of `length` lowercase hex characters, or its first characters: `what` names it (`a job id`). */
export function idPrefix(what: string, length = 64): Parser<string> {
  const form = new RegExp(`^[0-9a-f]{1,${length}}$`);
  return (text, name) => {
    if (!form.test(text)) throw new UsageError(`${name} must be ${what} or its first characters (lowercase hex), got ${JSON.stringify(text)}`);
    return text;
  };
}

/** What the messages call the ids: `{ none: 'no job', plural: 'jobs' }`, and what to add when none matches. */
export interface IdKind {
  readonly none: string;
  readonly plural: string;
  readonly hint?: string;
}

/**
 * The one of `ids` that starts with `ref`. None: NodeClientError `${none} whose id starts with …`;
 * several: how many, the first few, and to give more of the id.
 */
export function uniqueId(ids: readonly string[], ref: string, kind: IdKind): string {
  const found = ids.filter((id) => id.startsWith(ref));
  if (found.length === 1) return found[0]!;
  if (found.length === 0) throw new NodeClientError(`${kind.none} whose id starts with ${ref}${kind.hint ?? ''}`);
  const listed = found.slice(0, LISTED).map((id) => id.slice(0, Math.max(16, ref.length)));
  const more = found.length > LISTED ? `, and ${found.length - LISTED} more` : '';
  throw new NodeClientError(`${found.length} ${kind.plural} have ids starting with ${ref} (${listed.join(', ')}${more}): give more of the id`);
}
