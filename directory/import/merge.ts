/**
 * Putting imports together: one record per id, one dataset-level source per key, everything in
 * one order, so that importing the same files again gives the same bytes.
 *
 * Records merge by id only. Ids are per source (`epa-` from the FRS, `wd-` from Wikidata, `cn-`
 * from exhibitor lists), so a merge is a newer import of the same source meeting an older one: the
 * newer wins for the record's fields and for everything that carries its source key (evidence,
 * contacts, source entries); what other sources contributed stays; first_seen keeps the earliest
 * date and updated the latest.
 *
 * A dataset update replaces, for each source key the new imports carry, that source's whole
 * contribution: a record the source listed before and no longer lists loses the source (its
 * evidence, contacts and source entry), and a record left with no source is dropped. Otherwise a
 * record removed from a source would stay in the directory for ever under ever newer dates.
 *
 * An import with a scope (source.ts ImportScope: some NAICS codes of the FRS) replaces less: only
 * its source's evidence with those values. A record it does not list loses that evidence, and the
 * source too when no other evidence of the source is left; a record it lists keeps the source's
 * other evidence. Everything the source said for other values stays as it was.
 */
import { type Dataset, datasetRecordLine } from '../dataset.ts';
import { type CategoryEvidence, CONTACT_KINDS, type Contact, type FactoryRecord, type SourceRef } from '../record.ts';
import { assignCategories, sortEvidence } from './evidence.ts';
import { byId, compareStrings, earlierDate, type ImportResult, laterDate, sortedUnique } from './source.ts';

function sortContacts(contacts: readonly Contact[]): Contact[] {
  return sortedUnique(
    contacts,
    (a, b) => CONTACT_KINDS.indexOf(a.kind) - CONTACT_KINDS.indexOf(b.kind) || compareStrings(a.value, b.value) || compareStrings(a.source, b.source),
    (c) => `${c.kind}\u0000${c.value}`,
  );
}

/** Sources by key, the later entry for a key replacing the earlier. */
export function mergeSources(...lists: readonly (readonly SourceRef[])[]): SourceRef[] {
  const byKey = new Map<string, SourceRef>();
  for (const list of lists) for (const s of list) byKey.set(s.key, s);
  return [...byKey.values()].sort((a, b) => compareStrings(a.key, b.key));
}

/**
 * A record in its one canonical form: evidence, contacts and sources sorted and without
 * duplicates, categories recomputed from the evidence.
 */
export function normalizeRecord(r: FactoryRecord): FactoryRecord {
  const category_evidence = sortEvidence(r.category_evidence);
  return {
    ...r,
    categories: assignCategories(category_evidence),
    category_evidence,
    contacts: sortContacts(r.contacts),
    sources: mergeSources(r.sources),
  };
}

/** The evidence or contacts of `items` that none of the sources `keys` gave. */
function notFrom<T extends { source: string }>(items: readonly T[], keys: ReadonlySet<string>): T[] {
  return items.filter((x) => !keys.has(x.source));
}

/** `newer` (from a later import of the same source) merged onto `older`; see the module comment. */
export function mergeRecords(older: FactoryRecord, newer: FactoryRecord): FactoryRecord {
  const replaced = new Set(newer.sources.map((s) => s.key));
  return normalizeRecord({
    ...newer,
    category_evidence: [...notFrom(older.category_evidence, replaced), ...newer.category_evidence],
    contacts: [...notFrom(older.contacts, replaced), ...newer.contacts],
    sources: mergeSources(
      older.sources.filter((s) => !replaced.has(s.key)),
      newer.sources,
    ),
    first_seen: earlierDate(older.first_seen, newer.first_seen),
    updated: laterDate(older.updated, newer.updated),
  });
}

/**
 * Records grouped by id and merged in order (a later one onto an earlier), then normalized and
 * sorted by id. Used within one import (a facility listed twice) and across the imports of one run.
 */
export function mergeRecordLists(...lists: readonly (readonly FactoryRecord[])[]): FactoryRecord[] {
  const byIdMap = new Map<string, FactoryRecord>();
  for (const list of lists) {
    for (const r of list) {
      const had = byIdMap.get(r.id);
      byIdMap.set(r.id, had === undefined ? normalizeRecord(r) : mergeRecords(had, r));
    }
  }
  return [...byIdMap.values()].sort(byId);
}

/** `r` without what the sources `keys` said; its source list may end up empty. */
function withdrawSources(r: FactoryRecord, keys: ReadonlySet<string>): FactoryRecord {
  return normalizeRecord({
    ...r,
    category_evidence: notFrom(r.category_evidence, keys),
    contacts: notFrom(r.contacts, keys),
    sources: r.sources.filter((s) => !keys.has(s.key)),
  });
}

/** Source key → the scope its imports share, for the keys only scoped imports carry. */
function scopesOf(imports: readonly ImportResult[]): Map<string, { property: string; values: Set<string> }> {
  const scopes = new Map<string, { property: string; values: Set<string> }>();
  const whole = new Set<string>();
  for (const i of imports) {
    for (const { key } of i.sources) {
      const had = scopes.get(key);
      if (i.scope === undefined || (had !== undefined && had.property !== i.scope.property)) whole.add(key);
      else scopes.set(key, { property: i.scope.property, values: new Set([...(had?.values ?? []), ...i.scope.values]) });
    }
  }
  for (const key of whole) scopes.delete(key);
  return scopes;
}

/**
 * `r` without what scoped imports replace: the evidence of their values, and the source itself
 * when it had such evidence and has none left. Returns the withdrawn record and the evidence and
 * contacts of the scoped sources it keeps (for a record listed again, which mergeRecords would
 * otherwise drop).
 */
function withdrawScoped(
  r: FactoryRecord,
  scopes: ReadonlyMap<string, { property: string; values: Set<string> }>,
): { rest: FactoryRecord; kept: FactoryRecord } {
  const inScope = (e: CategoryEvidence): boolean => {
    const scope = scopes.get(e.source);
    return scope !== undefined && e.property === scope.property && scope.values.has(e.value);
  };
  const evidence = r.category_evidence.filter((e) => !inScope(e));
  const gone = new Set(
    [...scopes.keys()].filter((key) => r.category_evidence.some((e) => e.source === key && inScope(e)) && !evidence.some((e) => e.source === key)),
  );
  const rest = withdrawSources({ ...r, category_evidence: evidence }, gone);
  const kept = {
    ...rest,
    category_evidence: rest.category_evidence.filter((e) => scopes.has(e.source)),
    contacts: rest.contacts.filter((c) => scopes.has(c.source)),
  };
  return { rest, kept };
}

/**
 * A dataset from `base` (an earlier dataset, or null) and new imports, in order. The imports
 * together replace the contribution of every source key they carry (see the module comment):
 * several files of one source given at once make that source's new contribution together; scoped
 * imports replace only their scope. Its date is the latest retrieval date among its sources, or
 * `generated` when given: never the clock, so the same inputs give the same file.
 */
export function mergeDataset(base: Dataset | null, imports: readonly ImportResult[], generated?: string): Dataset {
  const sources = mergeSources(base?.sources ?? [], ...imports.map((i) => i.sources));
  const scopes = scopesOf(imports);
  const replaced = new Set(imports.flatMap((i) => i.sources.map((s) => s.key)).filter((key) => !scopes.has(key)));
  const listed = new Map(mergeRecordLists(...imports.map((i) => i.records)).map((r) => [r.id, r]));
  const records: FactoryRecord[] = [];
  for (const old of base?.records ?? []) {
    const { rest, kept } = withdrawScoped(withdrawSources(old, replaced), scopes);
    const again = listed.get(old.id);
    if (again !== undefined) {
      // mergeRecords keeps the earliest first_seen: a source listing a record again is not news.
      const merged = mergeRecords(rest, again);
      records.push(
        normalizeRecord({
          ...merged,
          category_evidence: [...merged.category_evidence, ...kept.category_evidence],
          contacts: [...merged.contacts, ...kept.contacts],
        }),
      );
      listed.delete(old.id);
    } else if (rest.sources.length > 0) records.push(rest);
  }
  records.push(...listed.values());
  records.sort(byId);
  const date = generated ?? sources.reduce((latest, s) => laterDate(latest, s.retrieved), base?.generated ?? '0000-01-01');
  if (date === '0000-01-01') throw new RangeError('an empty import has no date: give one');
  return { generated: date, sources, records };
}

/** What an update did to a dataset's records, by id. */
export interface DatasetChanges {
  /** Ids only the new dataset holds. */
  added: number;
  /** Ids both hold, with a record that differs. */
  updated: number;
  /** Ids only the old dataset held. */
  removed: number;
}

/** Counts the records `after` added, changed and dropped relative to `before` (null: none). */
export function datasetChanges(before: Dataset | null, after: Dataset): DatasetChanges {
  const old = new Map((before?.records ?? []).map((r) => [r.id, r]));
  let added = 0;
  let updated = 0;
  for (const r of after.records) {
    const had = old.get(r.id);
    if (had === undefined) added++;
    // The dataset's own line form is canonical: equal lines, equal records.
    else if (datasetRecordLine(had) !== datasetRecordLine(r)) updated++;
    old.delete(r.id);
  }
  return { added, updated, removed: old.size };
}
