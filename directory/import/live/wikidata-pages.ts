/**
 * Wikidata through its public SPARQL endpoint (the Wikidata Query Service), in two steps, each a
 * POST of the query (form-encoded `query=…`, `Accept: application/sparql-results+json`), answered
 * as W3C SPARQL 1.1 Query Results JSON:
 *
 * 1. The industries: every value of industry (P452) whose English label names one of the
 *    directory's activities (one small query, run once and kept with the pages). The label test is
 *    a REGEX, but over the distinct industries only, never repeated per page.
 * 2. The companies of those industries, a page at a time: `VALUES ?industry { wd:Q… }`, with
 *    country, city, region (the ISO 3166-2 code of a subdivision the city lies in) and official
 *    website, ordered by every variable that can differ between two
 *    rows, so LIMIT/OFFSET pages neither overlap nor skip rows between requests.
 *
 * The page query selects the variables the file importer reads (wikidata.ts), so a saved result
 * imports the same way. POST rather than GET: the VALUES list can outgrow a URL. Results are CC0.
 */

/** The public endpoint. */
export const WIKIDATA_SPARQL_ENDPOINT = 'https://query.wikidata.org/sparql';

/** What the endpoint is asked to answer in. */
export const SPARQL_JSON = 'application/sparql-results+json';

/**
 * Words of industry labels that point to a category: the medium and strong phrases of the text
 * rules (evidence.ts TEXT_RULES), as one case-insensitive regular expression. The importer grades
 * each label again with the rules themselves.
 */
export const INDUSTRY_LABEL_PATTERN =
  'machining|machine shop|cnc|sheet metal|injection mo(u)?ld|printed circuit|surface mount|electronics manufacturing|' +
  'wire harness|wiring harness|cable assembl|electroplating|plating|anodi[sz]ing|powder coating|galvani[sz]ing|' +
  'surface finishing|surface treatment|contract manufactur|inspection|metrology|testing laborator';

/** Step 1: the industries (P452 values) whose English label matches the pattern, in Q-id order. */
export function industriesQuery(): string {
  return `SELECT DISTINCT ?industry WHERE {
  { SELECT DISTINCT ?industry WHERE { ?company wdt:P452 ?industry . } }
  ?industry rdfs:label ?name .
  FILTER(LANG(?name) = "en" && REGEX(?name, "${INDUSTRY_LABEL_PATTERN}", "i"))
}
ORDER BY ?industry`;
}

/** The Q-ids of step 1's answer; throws when it is not SPARQL JSON with ?industry. */
export function readIndustries(json: string): string[] {
  const document = JSON.parse(json) as { results?: { bindings?: { industry?: { value?: string } }[] } };
  const bindings = document?.results?.bindings;
  if (!Array.isArray(bindings)) throw new Error('not SPARQL JSON results (results.bindings)');
  return [...new Set(bindings.map((b) => /\/entity\/(Q[1-9]\d*)$/.exec(b?.industry?.value ?? '')?.[1]).filter((q) => q !== undefined))].sort();
}

/**
 * Step 2, one page. Labels in English, else the language-neutral `mul` labels Wikidata added for
 * names that are the same in every language; without either the label service gives the Q-id.
 */
export function wikidataQuery(industries: readonly string[], limit: number, offset: number): string {
  return `SELECT ?item ?itemLabel ?countryCode ?city ?cityLabel ?regionCode ?industry ?industryLabel ?website ?modified WHERE {
  VALUES ?industry { ${industries.map((q) => `wd:${q}`).join(' ')} }
  ?item wdt:P452 ?industry ;
        wdt:P17 ?country .
  ?country wdt:P297 ?countryCode .
  OPTIONAL {
    ?item wdt:P159|wdt:P131 ?city .
    OPTIONAL { ?city wdt:P131* ?subdivision . ?subdivision wdt:P300 ?regionCode . }
  }
  OPTIONAL { ?item wdt:P856 ?website . }
  OPTIONAL { ?item schema:dateModified ?modified . }
  SERVICE wikibase:label { bd:serviceParam wikibase:language "en,mul". }
}
ORDER BY ?item ?industry ?country ?countryCode ?city ?regionCode ?website ?modified
LIMIT ${limit}
OFFSET ${offset}`;
}

/** The form body of a POST carrying `query`. */
export function sparqlForm(query: string): string {
  return new URLSearchParams({ query, format: 'json' }).toString();
}

/**
 * The Query Service stops a query after 60 s and answers 500 with the Java exception in the body.
 * The same query would time out again, so it is not retried (see polite-fetch.ts `stopRetrying`).
 */
export function queryTimedOut(status: number, body: string): string | undefined {
  return status === 500 && /TimeoutException/.test(body)
    ? 'the Query Service stopped the query at its time limit; retrying the same query would not help: run again with a smaller --page-size, or later'
    : undefined;
}
