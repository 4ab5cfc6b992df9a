/**
 * Putting imports together: one record per id, one dataset-level source per key, everything in
 * one order, so that importing the same files again gives the same bytes.
 *
 * Records merge by id only. Ids are per source (`epa-` from the FRS, `wd-` from Wikidata, `cn-`
 * from exhibitor lists), so a merge is a newer import of the same source meeting an older one: the
 * newer wins for the record's fields and for everything that carries its source key (evidence,
 * contacts, source entries); what other sources contributed stays; first_seen keeps the earliest
 * date and updated the latest.
 */
import type { Dataset } from '../dataset.ts';
import { CONTACT_KINDS, type Contact, type FactoryRecord, type SourceRef } from '../record.ts';
import { assignCategories, sortEvidence } from './evidence.ts';
import { byId, compareStrings, earlierDate, type ImportResult, laterDate, sortedUnique } from './source.ts';

function sortContacts(contacts: readonly Contact[]): Contact[] {
  return sortedUnique(
    contacts,
    (a, b) =>
      CONTACT_KINDS.indexOf(a.kind) - CONTACT_KINDS.indexOf(b.kind) ||
      compareStrings(a.value, b.value) ||
      compareStrings(a.source, b.source),
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

/** `newer` (from a later import of the same source) merged onto `older`; see the module comment. */
export function mergeRecords(older: FactoryRecord, newer: FactoryRecord): FactoryRecord {
  const replaced = new Set(newer.sources.map((s) => s.key));
  const kept = <T extends { source: string }>(items: readonly T[]): T[] => items.filter((x) => !replaced.has(x.source));
  return normalizeRecord({
    ...newer,
    category_evidence: [...kept(older.category_evidence), ...newer.category_evidence],
    contacts: [...kept(older.contacts), ...newer.contacts],
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
 * sorted by id. Used within one import (a facility listed twice) and across imports.
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

/**
 * A dataset from `base` (an earlier dataset, or null) and new imports, in order. Its date is the
 * latest retrieval date among its sources, or `generated` when given: never the clock, so the
 * same inputs give the same file.
 */
export function mergeDataset(
  base: Dataset | null,
  imports: readonly ImportResult[],
  generated?: string,
): Dataset {
  const sources = mergeSources(base?.sources ?? [], ...imports.map((i) => i.sources));
  const records = mergeRecordLists(base?.records ?? [], ...imports.map((i) => i.records));
  const date = generated ?? sources.reduce((latest, s) => laterDate(latest, s.retrieved), base?.generated ?? '0000-01-01');
  if (date === '0000-01-01') throw new RangeError('an empty import has no date: give one');
  return { generated: date, sources, records };
}
