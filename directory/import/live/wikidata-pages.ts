/**
 * Wikidata through its public SPARQL endpoint (the Wikidata Query Service): companies whose
 * industry (P452) names one of the directory's activities, with country, city and official
 * website, a page at a time as W3C SPARQL 1.1 Query Results JSON. One GET per page:
 *
 *   https://query.wikidata.org/sparql?query=<the query, LIMIT and OFFSET>&format=json
 *
 * with `Accept: application/sparql-results+json`. The query selects the variables the file
 * importer reads (wikidata.ts), so a saved result of it imports the same way. Results are CC0.
 */

/** The public endpoint. */
export const WIKIDATA_SPARQL_ENDPOINT = 'https://query.wikidata.org/sparql';

/**
 * Words of industry labels that point to a category: the medium and strong phrases of the text
 * rules (evidence.ts TEXT_RULES), as one case-insensitive regular expression the query filters
 * industries by. The importer grades each label again with the rules themselves.
 */
export const INDUSTRY_LABEL_PATTERN =
  'machining|machine shop|cnc|sheet metal|injection mo(u)?ld|printed circuit|surface mount|electronics manufacturing|' +
  'wire harness|wiring harness|cable assembl|electroplating|plating|anodi[sz]ing|powder coating|galvani[sz]ing|' +
  'surface finishing|surface treatment|contract manufactur|inspection|metrology|testing laborator';

/** The query for one page; ORDER BY makes OFFSET paging stable between requests. */
export function wikidataQuery(limit: number, offset: number): string {
  return `SELECT ?item ?itemLabel ?countryCode ?city ?cityLabel ?industry ?industryLabel ?website ?modified WHERE {
  ?item wdt:P452 ?industry ;
        wdt:P17 ?country .
  ?industry rdfs:label ?industryName .
  FILTER(LANG(?industryName) = "en" && REGEX(?industryName, "${INDUSTRY_LABEL_PATTERN}", "i"))
  ?country wdt:P297 ?countryCode .
  OPTIONAL { ?item wdt:P159|wdt:P131 ?city . }
  OPTIONAL { ?item wdt:P856 ?website . }
  OPTIONAL { ?item schema:dateModified ?modified . }
  SERVICE wikibase:label { bd:serviceParam wikibase:language "en". }
}
ORDER BY ?item ?industry ?city ?website
LIMIT ${limit}
OFFSET ${offset}`;
}

/** The URL of one page. */
export function wikidataPageUrl(endpoint: string, limit: number, offset: number): string {
  return `${endpoint}?${new URLSearchParams({ query: wikidataQuery(limit, offset), format: 'json' })}`;
}

/** What the endpoint is asked to answer in. */
export const SPARQL_JSON = 'application/sparql-results+json';
