/**
 * The OpenAPI 3.1.0 document served at /openapi.json, generated from the parameter definitions
 * and structs the server validates with (schemas.ts), so it states exactly what is enforced.
 */
import { FactoryRecordStruct, SourceRefStruct } from '../record.ts';
import { NOTICE, USE_RULES } from './attribution.ts';
import { type SchemaRefs, structSchema } from './json-schema.ts';
import { type JsonSchema, openApiParameter, paramsSchema } from './params.ts';
import {
  AttributionStruct,
  ExportStruct,
  FACTORY_ID_PARAM,
  KIND_RULES,
  ProblemStruct,
  ReceiptStruct,
  SEARCH_PARAMS,
  SearchResultStruct,
  StatsStruct,
  SUBMISSION_FIELDS,
  SUBMISSION_ID_PARAM,
  SUBMISSION_KINDS,
  SUBMISSION_TOKEN_PARAM,
  SubmissionStatusStruct,
  UnavailableStruct,
} from './schemas.ts';

/**
 * info.version: the version of this description (spec §9). 1.2.0 added the optional `region`
 * search parameter: a minor version, as nothing a 1.1.0 client sends or reads changed.
 */
export const API_VERSION = '1.2.0';

/** The statuses every read operation lists (spec §7), besides 200. */
export const READ_ERROR_STATUSES = ['400', '404', '413', '429', '503'] as const;

const REFS: SchemaRefs = new Map<Parameters<typeof structSchema>[0], string>([
  [FactoryRecordStruct, '#/components/schemas/FactoryRecord'],
  [SourceRefStruct, '#/components/schemas/SourceRef'],
  [AttributionStruct, '#/components/schemas/Attribution'],
]);

const schema = (name: string): JsonSchema => ({ $ref: `#/components/schemas/${name}` });
const response = (name: string): JsonSchema => ({ $ref: `#/components/responses/${name}` });

const RETRY_AFTER = {
  description: 'Seconds to wait before the next request.',
  schema: { type: 'integer', minimum: 1 },
};

// The IETF httpapi draft "RateLimit header fields for HTTP": on every answer while the limit is on.
const RATE_LIMIT_HEADERS = {
  'RateLimit-Policy': {
    description: 'The client\'s quota as a token bucket: `"burst";q=<requests at once>;w=<seconds to refill from empty>`.',
    schema: { type: 'string' },
  },
  RateLimit: {
    description: 'What is left of it: `"burst";r=<requests left>;t=<seconds until full again, or after a 429 until the next request>`.',
    schema: { type: 'string' },
  },
};

function problem(description: string, headers?: Record<string, JsonSchema>): JsonSchema {
  return {
    description,
    headers: { ...headers, ...RATE_LIMIT_HEADERS },
    content: { 'application/problem+json': { schema: schema('Problem') } },
  };
}

/** A response with a body of `mediaType` (JSON unless said otherwise). */
function json(description: string, body: JsonSchema, headers?: Record<string, JsonSchema>, mediaType = 'application/json'): JsonSchema {
  return { description, headers: { ...headers, ...RATE_LIMIT_HEADERS }, content: { [mediaType]: { schema: body } } };
}

/** 200 plus the five error statuses of spec §7. */
function readResponses(ok: JsonSchema): JsonSchema {
  return {
    '200': ok,
    '400': response('BadRequest'),
    '404': response('NotFound'),
    '413': response('TooLarge'),
    '429': response('RateLimited'),
    '503': response('Unavailable'),
  };
}

const IF_NONE_MATCH = {
  name: 'If-None-Match',
  in: 'header',
  required: false,
  description: 'The ETag of the copy the client holds.',
  schema: { type: 'string' },
};

/** The responses of a read whose body carries a strong ETag: readResponses and 304. */
function conditionalResponses(description: string, body: JsonSchema, etag: string, mediaType?: string): JsonSchema {
  return {
    ...readResponses(
      json(
        description,
        body,
        {
          ETag: { description: etag, schema: { type: 'string' } },
          'Cache-Control': { description: 'How long a copy may be used before revalidating.', schema: { type: 'string' } },
        },
        mediaType,
      ),
    ),
    '304': { description: 'The copy named in If-None-Match is current.' },
  };
}

/**
 * The submission body's schema: the field rules, then each kind's rules as if/then. Each `then`
 * repeats the definitions of the fields it requires, so that it stands on its own for linters.
 */
function submissionRequestSchema(): JsonSchema {
  const fields = paramsSchema(SUBMISSION_FIELDS);
  const properties = fields.properties as Record<string, JsonSchema>;
  const requiring = (names: string[]): JsonSchema => ({
    properties: Object.fromEntries(names.map((name) => [name, properties[name]])),
    required: names,
  });
  const rules = SUBMISSION_KINDS.map((kind) => {
    const rule = KIND_RULES[kind];
    const needed = [...(rule.record_id === 'required' ? ['record_id'] : []), ...(rule.message === 'required' ? ['message'] : [])];
    const then: JsonSchema = {
      ...(needed.length > 0 ? requiring(needed) : {}),
      ...(rule.record_id === 'forbidden' ? { not: requiring(['record_id']) } : {}),
    };
    return { if: { properties: { kind: { const: kind } } }, then };
  });
  return {
    ...fields,
    allOf: rules,
    description: 'Empty fields count as absent. A correction or removal must name an existing record.',
  };
}

/** Builds the document (it does not depend on the request, so it is built once). */
export function openApiDocument(): JsonSchema {
  const searchOp = {
    operationId: 'searchFactories',
    summary: 'Search manufacturers',
    description:
      'Filters combine with AND. Unknown or repeated parameters are refused with 400, so a misspelt filter never widens a search. ' +
      'Results are in a total order (exact name matches first), so paging with next_offset never repeats or skips a record.',
    security: [],
    parameters: SEARCH_PARAMS.map((def) => openApiParameter(def, 'query')),
    responses: readResponses(json('One page of matching records.', schema('SearchResult'))),
  };
  return {
    openapi: '3.1.0',
    info: {
      title: 'mesh manufacturer directory',
      version: API_VERSION,
      // The service's code; the records keep their sources' own terms (each record's sources name them).
      license: { name: 'MIT', identifier: 'MIT' },
      description: [
        NOTICE,
        '',
        'Use rules:',
        ...USE_RULES.map((rule) => `- ${rule}`),
        '',
        'Also served: an MCP endpoint (Streamable HTTP, stateless, JSON responses) at /mcp with the tools ' +
          'search_factories, get_factory and registry_stats; a submission form for people at /submit. ' +
          'Errors are RFC 9457 problem details; each type URI /problems/{code} is documented at that path. ' +
          'The service never sends messages, verifies companies, quotes prices or places orders.',
      ].join('\n'),
    },
    servers: [{ url: '/' }],
    paths: {
      '/api/v1/factories': { get: searchOp },
      '/api/v1/factories/{id}': {
        get: {
          operationId: 'getFactory',
          security: [],
          summary: 'One record',
          description: 'A malformed id is 400; a well-formed id the directory does not hold is 404.',
          parameters: [openApiParameter(FACTORY_ID_PARAM, 'path')],
          responses: readResponses(json('The record, with its sources, dates and verification status.', schema('FactoryRecord'))),
        },
      },
      '/api/v1/stats': {
        get: {
          operationId: 'registryStats',
          security: [],
          summary: 'Registry statistics',
          description: 'They change only with the dataset: send the ETag back in If-None-Match to revalidate (304).',
          parameters: [IF_NONE_MATCH],
          responses: conditionalResponses('Counts by country, category, contact kind and source.', schema('Stats'), 'Strong validator of these counts.'),
        },
      },
      '/directory.json': {
        get: {
          operationId: 'exportDirectory',
          security: [],
          summary: 'Full export',
          description:
            'The whole directory for local filtering, streamed. Send the ETag back in If-None-Match to refresh cheaply (304). ' +
            'The header carries attribution and use rules; the export is itself a dataset file that mesh directory can serve.',
          parameters: [IF_NONE_MATCH],
          responses: conditionalResponses('The export.', schema('Export'), 'Strong validator of this export.'),
        },
      },
      '/directory.ndjson': {
        get: {
          operationId: 'exportDirectoryNdjson',
          summary: 'Full export, one record a line',
          description:
            'The records of /directory.json as NDJSON, one record a line, for tools that read records one at a time. ' +
            'Each record carries its sources (URL, licence, retrieval date); the notice and use rules are in /directory.json and /api/v1/stats. ' +
            'Send the ETag back in If-None-Match to refresh cheaply (304).',
          security: [],
          parameters: [IF_NONE_MATCH],
          responses: conditionalResponses('One FactoryRecord a line.', schema('FactoryRecord'), 'Strong validator of this export.', 'application/x-ndjson'),
        },
      },
      '/api/v1/submissions': {
        post: {
          operationId: 'createSubmission',
          security: [],
          summary: 'Ask to join, or to correct or remove a record',
          description:
            'Stored privately for review: it publishes nothing and never appears in search, export or statistics. ' +
            "The receipt's token is shown once; keep it to read the status.",
          requestBody: {
            required: true,
            content: {
              'application/x-www-form-urlencoded': { schema: schema('SubmissionRequest') },
              'application/json': { schema: schema('SubmissionRequest') },
            },
          },
          responses: {
            '201': json('Received.', schema('Receipt'), {
              Location: { description: 'The status URL.', schema: { type: 'string' } },
            }),
            '400': response('BadRequest'),
            '413': response('TooLarge'),
            '415': problem('Not form-encoded or JSON.'),
            '429': response('RateLimited'),
            '503': problem('The registry (to check a record id) or the submission store is unavailable.', { 'Retry-After': RETRY_AFTER }),
          },
        },
      },
      '/api/v1/submissions/{id}': {
        get: {
          operationId: 'getSubmission',
          summary: 'Status of a submission',
          description: "Needs the receipt's token. A missing or wrong token and an unknown id get the same 401.",
          security: [{ submissionToken: [] }, {}],
          parameters: [openApiParameter(SUBMISSION_ID_PARAM, 'path'), openApiParameter(SUBMISSION_TOKEN_PARAM, 'query')],
          responses: {
            '200': json('The status.', schema('SubmissionStatus')),
            '400': response('BadRequest'),
            '401': problem('No token, a wrong token, or no such submission.', {
              'WWW-Authenticate': { description: 'Bearer', schema: { type: 'string' } },
            }),
            '404': response('NotFound'),
            '413': response('TooLarge'),
            '429': response('RateLimited'),
            '503': problem('The submission store is unavailable.', { 'Retry-After': RETRY_AFTER }),
          },
        },
      },
    },
    components: {
      schemas: {
        FactoryRecord: structSchema(FactoryRecordStruct, new Map([...REFS].filter(([s]) => s !== FactoryRecordStruct))),
        SourceRef: structSchema(SourceRefStruct),
        Attribution: structSchema(AttributionStruct, new Map([...REFS].filter(([s]) => s === SourceRefStruct))),
        SearchResult: structSchema(SearchResultStruct, REFS),
        Stats: structSchema(StatsStruct, REFS),
        Export: structSchema(ExportStruct, REFS),
        Problem: structSchema(ProblemStruct),
        Unavailable: structSchema(UnavailableStruct),
        SubmissionRequest: submissionRequestSchema(),
        Receipt: structSchema(ReceiptStruct),
        SubmissionStatus: structSchema(SubmissionStatusStruct),
      },
      responses: {
        BadRequest: problem('Invalid, unknown or repeated parameter (the errors member names each).'),
        NotFound: problem('No such record or path.'),
        TooLarge: problem("Request too large: a body (or query string) over the route's bound."),
        RateLimited: problem('Rate limited: respect Retry-After.', { 'Retry-After': RETRY_AFTER }),
        Unavailable: {
          description: 'Registry unavailable. factories is null: this is never an empty directory.',
          headers: { 'Retry-After': RETRY_AFTER, ...RATE_LIMIT_HEADERS },
          content: { 'application/problem+json': { schema: schema('Unavailable') } },
        },
      },
      securitySchemes: {
        submissionToken: { type: 'http', scheme: 'bearer', description: 'The token from a submission receipt.' },
      },
    },
  };
}
