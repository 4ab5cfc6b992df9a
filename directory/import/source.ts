/**
 * What every importer returns, and the small checks they share. An importer is a pure function
 * from a source's text (and the options that date it) to records: no clock, no file system.
 */
import type { FactoryRecord, SourceRef } from '../record.ts';

/** A row (or binding) that was skipped or trimmed, and why. `line` is 1-based in the source text. */
export interface ImportProblem {
  line: number;
  message: string;
  /** The input could not be read past this point (an unclosed quote): what follows is missing. */
  stopped?: true;
}

export interface ImportResult {
  /** The dataset-level sources: the export, query or lists as a whole (empty when nothing was read). */
  sources: SourceRef[];
  /** Sorted by id, ids unique. */
  records: FactoryRecord[];
  /** Rows (or bindings) read, good and bad. */
  rows: number;
  problems: ImportProblem[];
  /**
   * Set when the import lists its source's records only for some values of one evidence property
   * (a live FRS import of chosen NAICS codes): it then replaces what the source said for those
   * values alone (merge.ts). Unset: it is the source's whole contribution.
   */
  scope?: ImportScope;
  /**
   * The newest date the input itself carries (an FRS export's latest UPDATE_DATE, a Wikidata
   * item's latest edit), and where it was found: the export cannot have been made before it, so
   * it dates a file whose download day is not known better than the file's modification time does.
   */
  ownDate?: OwnDate;
}

/** See ImportResult.ownDate. */
export interface OwnDate {
  readonly date: string;
  /** What carried it, for the message that says which date was used: `UPDATE_DATE`. */
  readonly from: string;
}

/** The later of two own dates (the first on a tie). */
export function laterOwnDate(a: OwnDate | undefined, b: OwnDate | undefined): OwnDate | undefined {
  if (a === undefined) return b;
  return b !== undefined && b.date > a.date ? b : a;
}

/** Values of an evidence property an import is complete for. */
export interface ImportScope {
  readonly property: string;
  readonly values: readonly string[];
}

/** True for an absolute http(s) URL without spaces. */
export function isHttpUrl(text: string): boolean {
  if (!/^https?:\/\/\S+$/i.test(text)) return false;
  try {
    new URL(text);
    return true;
  } catch {
    return false;
  }
}

/** The later of two YYYY-MM-DD dates (they compare as strings). */
export function laterDate(a: string, b: string): string {
  return a > b ? a : b;
}

/** The earlier of two YYYY-MM-DD dates. */
export function earlierDate(a: string, b: string): string {
  return a < b ? a : b;
}

/** Code-unit order of strings (what the dataset's sorting uses), as a comparator. */
export function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** `items` sorted by `order`, keeping the first of those with equal `key`. */
export function sortedUnique<T>(items: readonly T[], order: (a: T, b: T) => number, key: (item: T) => string): T[] {
  const seen = new Set<string>();
  return [...items].sort(order).filter((item) => {
    const k = key(item);
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}

/** Ids sort by code unit, as the dataset requires. */
export function byId(a: { id: string }, b: { id: string }): number {
  return compareStrings(a.id, b.id);
}
