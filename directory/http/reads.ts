/**
 * The read operations, shared by the HTTP routes and the MCP tools so that both give the same
 * answers: search, one record, statistics. Each body that carries records carries attribution.
 */
import type { FactoryRecord } from '../record.ts';
import type { DirectoryStats, SearchQuery, SearchResult } from '../search.ts';
import type { Attribution } from './attribution.ts';
import type { LoadedData } from './data-source.ts';
import { ProblemError } from './problem.ts';

export type SearchBody = SearchResult & { attribution: Attribution };
export type StatsBody = DirectoryStats & { attribution: Attribution };

/** searchFactories / search_factories. */
export function searchFactories(data: LoadedData, query: SearchQuery): SearchBody {
  return { ...data.index.search(query), attribution: data.attribution };
}

/** getFactory / get_factory: the record, or the 404 problem for a well-formed unknown id. */
export function factoryById(data: LoadedData, id: string): FactoryRecord {
  const record = data.index.get(id);
  if (record === undefined) throw new ProblemError('not-found', `the directory has no record ${id}`);
  return record;
}

/** registryStats / registry_stats. */
export function registryStats(data: LoadedData): StatsBody {
  return { ...data.index.stats(), attribution: data.attribution };
}
