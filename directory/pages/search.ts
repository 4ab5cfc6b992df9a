/**
 * The search page at `/` for people (a browser asking for text/html): a search box and the
 * filters as a plain GET form, pages of results with each record's sources, dates and
 * verification status, and the dataset's attribution. Server-rendered, no JavaScript, every value
 * escaped. It runs the same search, with the same parameter rules, as `GET /api/v1/factories`.
 */
import type { Call } from '../../core/web/router.ts';
import type { Attribution } from '../http/attribution.ts';
import type { LoadedData } from '../http/data-source.ts';
import { parseQuery } from '../http/params.ts';
import { type FieldError, ProblemError } from '../http/problem.ts';
import { registryStats, searchFactories } from '../http/reads.ts';
import { SEARCH_PARAMS } from '../http/schemas.ts';
import { CATEGORIES, CONTACT_KINDS, type ContactKind, type FactoryRecord } from '../record.ts';
import type { SearchQuery } from '../search.ts';
import { escapeHtml, PAGE_HEADERS, page, wantsHtml } from './layout.ts';

/** The page's form fields: the search parameters, as typed. */
type Values = Partial<Record<string, string>>;

const CATEGORY_LABELS: Record<(typeof CATEGORIES)[number], string> = {
  'cnc-machining': 'CNC machining',
  'sheet-metal': 'Sheet metal',
  'injection-mould': 'Injection moulding',
  'pcba-smt': 'PCB assembly (SMT)',
  'wire-harness': 'Wire harness',
  'surface-finishing': 'Surface finishing',
  assembly: 'Assembly',
  inspection: 'Inspection',
};

const CONTACT_LABELS: Record<ContactKind, string> = {
  website: 'Has a website',
  email: 'Has an email address',
  'observed-email': 'Has an address seen on a list',
};

const PAGE_SIZES = ['20', '50', '100'];

const STYLE = `form.search .q{display:flex;gap:.5rem;align-items:flex-end}form.search .q div{flex:1}form.search .q button{margin:0}
.filters{display:grid;grid-template-columns:repeat(3,1fr);gap:0 1rem;border:0;padding:0;margin:.5rem 0 0}
.filters legend{font-weight:600;padding:0;margin-top:.5rem}.filters>div{display:flex;flex-direction:column;justify-content:flex-end}
.count{font-weight:600;margin:1.25rem 0 .5rem}ol.results{list-style:none;padding:0;margin:0}
.record{background:#fff;border:1px solid var(--line);border-radius:6px;padding:.75rem 1rem;margin:.75rem 0}
.record h2{font-size:1.15rem;margin:0;overflow-wrap:anywhere}.where{color:var(--muted);margin:.1rem 0 .4rem}
.tags{display:flex;flex-wrap:wrap;gap:.35rem;margin:.4rem 0;padding:0;list-style:none}
.tags li{background:#e7f0fa;border-radius:999px;padding:.05rem .6rem;font-size:.9rem}.tags li.none{background:#eee;color:var(--muted)}
.record dl{display:grid;grid-template-columns:max-content 1fr;gap:.15rem 1rem;margin:.5rem 0;font-size:.95rem}
.record dd{margin:0;overflow-wrap:anywhere}.record details{font-size:.9rem;margin:.25rem 0}
.actions{display:flex;flex-wrap:wrap;gap:.25rem 1rem;font-size:.9rem;margin:.5rem 0 0}
nav.pages{display:flex;justify-content:space-between;gap:1rem;margin:1rem 0}
ul.browse{columns:2 14rem;padding-left:1.2rem}
@media (max-width:36rem){form.search .q{flex-direction:column;align-items:stretch}.filters{grid-template-columns:repeat(2,1fr)}.record dl{grid-template-columns:1fr}.record dt{margin-top:.25rem}}`;

/**
 * The form's values as search parameters. A form sends every field, filled or not: an empty one is
 * no filter (the API refuses `country=`), and codes are read in upper case (a person types `us`).
 */
function formParams(query: URLSearchParams): URLSearchParams {
  const params = new URLSearchParams();
  for (const [name, value] of query) {
    if (value === '') continue;
    params.append(name, name === 'country' || name === 'region' ? value.trim().toUpperCase() : value);
  }
  return params;
}

const valuesOf = (params: URLSearchParams): Values => Object.fromEntries(params);

/** A link to the page with `values` and `change` (an undefined value drops the parameter). */
function pageHref(values: Values, change: Values): string {
  const merged: Record<string, string> = {};
  for (const [name, value] of Object.entries({ ...values, ...change })) if (value !== undefined && value !== '') merged[name] = value;
  const query = new URLSearchParams(merged).toString();
  return query === '' ? '/' : `/?${query}`;
}

function select(name: string, label: string, options: readonly [value: string, text: string][], chosen: string | undefined): string {
  const items = options.map(
    ([value, text]) => `<option value="${escapeHtml(value)}"${value === (chosen ?? '') ? ' selected' : ''}>${escapeHtml(text)}</option>`,
  );
  return `<div><label for="${name}">${label}</label><select id="${name}" name="${name}">${items.join('')}</select></div>`;
}

function input(name: string, label: string, value: string | undefined, attributes: string): string {
  return `<div><label for="${name}">${label}</label><input id="${name}" name="${name}" value="${escapeHtml(value ?? '')}" ${attributes}></div>`;
}

function searchForm(values: Values): string {
  return `<form class="search panel" method="get" action="/" role="search">
<div class="q"><div><label for="q">Search</label><input id="q" name="q" type="search" value="${escapeHtml(values.q ?? '')}" maxlength="200"
 placeholder="Company, city or activity: machining, plating, harness…"></div><button type="submit">Search</button></div>
<fieldset class="filters"><legend>Filters</legend>
${input('country', 'Country', values.country, 'maxlength="2" placeholder="US" autocapitalize="characters" aria-describedby="country-hint"')}
${input('region', 'State or province', values.region, 'maxlength="6" placeholder="US-OH" autocapitalize="characters" aria-describedby="region-hint"')}
${input('city', 'City', values.city, 'maxlength="100"')}
${select('category', 'Category', [['', 'Any category'], ...CATEGORIES.map((c): [string, string] => [c, CATEGORY_LABELS[c]])], values.category)}
${select('contact', 'Contact', [['', 'Any'], ...CONTACT_KINDS.map((c): [string, string] => [c, CONTACT_LABELS[c]])], values.contact)}
${select(
  'limit',
  'Per page',
  PAGE_SIZES.map((n): [string, string] => [n, n]),
  values.limit ?? '20',
)}
</fieldset>
<p class="hint"><span id="country-hint">Country: two letters (ISO 3166-1).</span> <span id="region-hint">State or province: its ISO 3166-2 code, where the sources give one.</span></p>
</form>`;
}

const httpLink = (url: string, text: string): string =>
  /^https?:\/\//i.test(url) ? `<a href="${escapeHtml(url)}" rel="nofollow noopener noreferrer">${escapeHtml(text)}</a>` : escapeHtml(text);

function contactItem(kind: ContactKind, value: string): string {
  if (kind === 'website') return httpLink(value, value);
  if (kind === 'email') return escapeHtml(value);
  return `${escapeHtml(value)} <span class="hint">(seen on a third party's list: not consent to be written to)</span>`;
}

function recordItem(r: FactoryRecord): string {
  const where = [r.city, r.region === null ? null : `${r.country}-${r.region}`, r.country].filter((part) => part !== null).map((part) => escapeHtml(part));
  const categories =
    r.categories.length === 0
      ? '<li class="none">No category assigned</li>'
      : r.categories.map((c) => `<li>${escapeHtml(CATEGORY_LABELS[c] ?? c)}</li>`).join('');
  const evidence =
    r.category_evidence.length === 0
      ? ''
      : `<details><summary>Why: ${r.category_evidence.length} piece${r.category_evidence.length === 1 ? '' : 's'} of evidence</summary><ul>${r.category_evidence
          .map(
            (e) =>
              `<li>${escapeHtml(CATEGORY_LABELS[e.category] ?? e.category)}: ${escapeHtml(e.label || e.value)} (${escapeHtml(e.property)} ${escapeHtml(e.value)}, ${escapeHtml(e.strength)}, from ${escapeHtml(e.source)})</li>`,
          )
          .join('')}</ul></details>`;
  const contacts = r.contacts.length === 0 ? '' : `<dt>Contacts</dt><dd>${r.contacts.map((c) => contactItem(c.kind, c.value)).join('<br>')}</dd>`;
  const sources = r.sources
    .map((s) => `${httpLink(s.url, s.name)}, ${escapeHtml(s.licence)}, retrieved <time datetime="${escapeHtml(s.retrieved)}">${escapeHtml(s.retrieved)}</time>`)
    .join('<br>');
  const verification =
    r.verification === 'source-listed' ? 'Listed by an official register (not checked by this directory)' : 'Unverified: from open or third-party sources';
  const id = encodeURIComponent(r.id);
  return `<li class="record" id="${escapeHtml(r.id)}"><h2>${escapeHtml(r.name)}</h2>
<p class="where">${where.join(' · ')}${r.address === null ? '' : ` · ${escapeHtml(r.address)}`}</p>
<ul class="tags" aria-label="Categories">${categories}</ul>${evidence}
<dl>${contacts}<dt>Sources</dt><dd>${sources}</dd><dt>Status</dt><dd>${escapeHtml(verification)}</dd>
<dt>Dates</dt><dd>first seen <time datetime="${escapeHtml(r.first_seen)}">${escapeHtml(r.first_seen)}</time>, updated <time datetime="${escapeHtml(r.updated)}">${escapeHtml(r.updated)}</time></dd></dl>
<p class="actions"><code>${escapeHtml(r.id)}</code><a href="/api/v1/factories/${id}">JSON</a><a href="/submit?kind=correction&amp;record_id=${id}">Correct</a><a href="/submit?kind=removal&amp;record_id=${id}">Remove</a></p></li>`;
}

function results(values: Values, query: SearchQuery, found: { total: number; next_offset: number | null; factories: FactoryRecord[] }): string {
  if (found.total === 0) return '<p class="count" role="status">No records match.</p>';
  if (found.factories.length === 0) {
    return `<p class="count" role="status">${found.total} records match; this page is past the last.</p><nav class="pages" aria-label="Pages"><a href="${escapeHtml(pageHref(values, { offset: undefined }))}">First page</a></nav>`;
  }
  const first = query.offset + 1;
  const last = query.offset + found.factories.length;
  const previous =
    query.offset > 0 ? pageHref(values, { offset: query.offset - query.limit > 0 ? String(Math.max(0, query.offset - query.limit)) : undefined }) : undefined;
  const next = found.next_offset === null ? undefined : pageHref(values, { offset: String(found.next_offset) });
  const pages =
    previous === undefined && next === undefined
      ? ''
      : `<nav class="pages" aria-label="Pages">${previous === undefined ? '<span></span>' : `<a href="${escapeHtml(previous)}" rel="prev">← Previous</a>`}${
          next === undefined ? '<span></span>' : `<a href="${escapeHtml(next)}" rel="next">Next →</a>`
        }</nav>`;
  return `<p class="count" role="status">${found.total} record${found.total === 1 ? '' : 's'}; showing ${first}–${last}</p>
<ol class="results" start="${first}">${found.factories.map(recordItem).join('\n')}</ol>${pages}`;
}

/** With nothing asked yet: what the directory holds, each category a link to its records. */
function overview(data: LoadedData): string {
  const stats = registryStats(data);
  const categories = CATEGORIES.map(
    (c) => `<li><a href="${escapeHtml(pageHref({}, { category: c }))}">${escapeHtml(CATEGORY_LABELS[c])}</a> (${stats.by_category[c] ?? 0})</li>`,
  ).join('');
  return `<p class="count">${stats.total} records from public sources, as of ${escapeHtml(stats.dataset_date)}.</p>
<h2>Browse by category</h2><ul class="browse">${categories}</ul>`;
}

function attributionFooter(attribution: Attribution | undefined): string {
  const rules = (attribution?.use_rules ?? []).map((rule) => `<li>${escapeHtml(rule)}</li>`).join('');
  const sources = (attribution?.sources ?? [])
    .map((s) => `<li>${httpLink(s.url, s.name)}: ${escapeHtml(s.licence)}, retrieved ${escapeHtml(s.retrieved)}</li>`)
    .join('');
  return `${attribution === undefined ? '' : `<p>${escapeHtml(attribution.notice)}</p><p>Dataset of ${escapeHtml(attribution.dataset_date)}. Sources:</p><ul>${sources}</ul><p>Use rules:</p><ul>${rules}</ul>`}
<p>The same search for programs: <a href="/api/v1/factories">/api/v1/factories</a>, described in <a href="/openapi.json">/openapi.json</a>; the whole dataset at <a href="/directory.json">/directory.json</a>; an MCP endpoint at <code>/mcp</code>.</p>`;
}

// The code fields in words a person reads; the other rules say enough in the API's own terms.
const FIELD_HELP: Partial<Record<string, string>> = {
  country: 'Country: give its two letters, like US or DE',
  region: 'State or province: give its ISO 3166-2 code, the country and the region, like US-OH or DE-BY',
};

function errorList(errors: readonly FieldError[], values: Values): string {
  const items = errors.map((e) => {
    const help = FIELD_HELP[e.name];
    const given = values[e.name];
    if (help !== undefined && given !== undefined) return `<li>${escapeHtml(`${help} (not ${JSON.stringify(given)}).`)}</li>`;
    return `<li>${escapeHtml(e.name === '' || e.detail.includes(e.name) ? e.detail : `${e.name}: ${e.detail}`)}</li>`;
  });
  return `<div class="errors" role="alert"><p>Please fix:</p><ul>${items.join('')}</ul></div>`;
}

const TITLE = 'Find a manufacturer';
const PAGE_OPTIONS = { current: '/', style: STYLE };

/**
 * GET / for a browser. Another client gets the 404 it always had: the API is under /api/v1.
 * Searches are cacheable like the API's; `Vary: Accept` since the path answers both.
 */
export async function searchPage(call: Call, params: URLSearchParams, requireData: () => Promise<LoadedData>): Promise<Response> {
  if (!wantsHtml(call.request)) {
    throw new ProblemError(
      'not-found',
      'no resource at / for this Accept: the search page is HTML (Accept: text/html); the API is under /api/v1, see /openapi.json',
    );
  }
  const headers = { ...PAGE_HEADERS, 'cache-control': 'public, max-age=60', vary: 'Accept' };
  const form = formParams(params);
  const values = valuesOf(form);
  let query: SearchQuery;
  try {
    query = parseQuery<SearchQuery>(SEARCH_PARAMS, form);
  } catch (error) {
    if (!(error instanceof ProblemError) || error.status !== 400) throw error;
    const errors = (error.extra.errors as FieldError[] | undefined) ?? [{ name: '', detail: error.message }];
    return new Response(page(TITLE, `${errorList(errors, values)}${searchForm(values)}`, { ...PAGE_OPTIONS, footer: attributionFooter(undefined) }), {
      status: 400,
      headers,
    });
  }
  let data: LoadedData;
  try {
    data = await requireData();
  } catch (error) {
    if (!(error instanceof ProblemError) || error.status !== 503) throw error;
    const body = `${searchForm(values)}<div class="errors" role="alert"><p>The directory's dataset is not available at the moment; this is not an empty directory. Try again shortly.</p></div>`;
    return new Response(page(TITLE, body, { ...PAGE_OPTIONS, footer: attributionFooter(undefined) }), {
      status: 503,
      headers: { ...headers, ...error.headers, 'cache-control': 'no-store' },
    });
  }
  const asked = [...form.keys()].some((name) => name !== 'limit' && name !== 'offset');
  const body = asked ? results(values, query, searchFactories(data, query)) : overview(data);
  return new Response(page(TITLE, `${searchForm(values)}${body}`, { ...PAGE_OPTIONS, footer: attributionFooter(data.attribution) }), { headers });
}
