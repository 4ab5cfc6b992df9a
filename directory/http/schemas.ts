/**
 * The directory's request parameters and response bodies, each defined once. The server validates
 * with these, `/openapi.json` and the MCP tool list are generated from them, and the tests check
 * every response against them.
 */
import { array, enums, integer, literal, nullable, object, optional, record, string, type } from 'superstruct';
import { CATEGORIES, CONTACT_KINDS, FACTORY_ID_PATTERN, FactoryRecordStruct, IsoDateStruct, REGION_PATTERN, SourceRefStruct } from '../record.ts';
import { annotate } from './json-schema.ts';
import { integerParam, type ParamDef, stringParam } from './params.ts';

// ---------------------------------------------------------------------------------------------
// Parameters

/** Search parameters (spec §4), shared by GET /api/v1/factories and the MCP tool search_factories. */
export const SEARCH_PARAMS: readonly ParamDef[] = [
  stringParam('q', 'Free text, matched case- and accent-insensitively against name, city and category evidence; exact name matches rank first.', {
    maxLength: 200,
  }),
  stringParam('country', 'ISO 3166-1 alpha-2 country code, upper case.', { pattern: /^[A-Z]{2}$/, minLength: 2, maxLength: 2 }),
  stringParam('region', 'ISO 3166-2 subdivision code, upper case (US-OH): records in that state or province, where their sources give it. Added in 1.2.0.', {
    pattern: REGION_PATTERN,
    minLength: 4,
    maxLength: 6,
  }),
  stringParam('city', 'City, compared as a whole, case- and accent-insensitively.', { minLength: 1, maxLength: 100 }),
  stringParam('category', 'Records assigned this category (see category_evidence for why).', { enum: CATEGORIES, minLength: 1, maxLength: 40 }),
  stringParam('contact', 'Records with at least one contact of this kind.', { enum: CONTACT_KINDS, minLength: 1, maxLength: 40 }),
  integerParam('limit', 'Records per page.', { minimum: 1, maximum: 100, default: 20 }),
  integerParam('offset', "Records to skip: the previous page's next_offset.", { minimum: 0, default: 0 }),
];

/** The path parameter of GET /api/v1/factories/{id} and the argument of get_factory. */
export const FACTORY_ID_PARAM: ParamDef = stringParam('id', 'Record id: cn- and 20 lowercase hex digits, wd-Q and a positive integer, or epa- and 12 digits.', {
  pattern: FACTORY_ID_PATTERN,
  minLength: 4,
  maxLength: 40,
  required: true,
});

/** Submission kinds: join the directory, correct a record, remove a record. */
export const SUBMISSION_KINDS = ['join', 'correction', 'removal'] as const;
export type SubmissionKind = (typeof SUBMISSION_KINDS)[number];

/** Fields of POST /api/v1/submissions (form-encoded or JSON). */
export const SUBMISSION_FIELDS: readonly ParamDef[] = [
  stringParam('kind', 'join, correction or removal.', { enum: SUBMISSION_KINDS, minLength: 1, maxLength: 20, required: true }),
  stringParam('record_id', 'The record to correct or remove (not given when joining).', {
    pattern: FACTORY_ID_PATTERN,
    minLength: 4,
    maxLength: 40,
  }),
  stringParam('company', 'Company name.', { minLength: 1, maxLength: 200, required: true }),
  stringParam('email', 'Contact email for the review; never published.', {
    pattern: /^[^\s@]+@[^\s@]+\.[^\s@]+$/,
    minLength: 6,
    maxLength: 254,
    required: true,
  }),
  stringParam('message', 'What to add, correct or remove, and why (required for a correction).', { maxLength: 4000 }),
];

/**
 * What each kind needs beyond the field rules: a record id for a correction or removal (and none
 * when joining), and a message saying what to correct.
 */
export const KIND_RULES: Readonly<Record<SubmissionKind, { record_id: 'required' | 'forbidden'; message: 'required' | 'optional' }>> = {
  join: { record_id: 'forbidden', message: 'optional' },
  correction: { record_id: 'required', message: 'required' },
  removal: { record_id: 'required', message: 'optional' },
};

/** Pattern of a submission id: 128 random bits in lowercase hex. */
export const SUBMISSION_ID_PATTERN = /^[0-9a-f]{32}$/;

/** The path parameter of GET /api/v1/submissions/{id}. */
export const SUBMISSION_ID_PARAM: ParamDef = stringParam('id', 'The id from the receipt.', {
  pattern: SUBMISSION_ID_PATTERN,
  minLength: 32,
  maxLength: 32,
  required: true,
});

/** The query form of the receipt's token, for links (a header is better: URLs end up in logs). */
export const SUBMISSION_TOKEN_PARAM: ParamDef = stringParam('token', 'The token from the receipt, when it cannot be sent as a Bearer token.', {
  minLength: 1,
  maxLength: 100,
});

// ---------------------------------------------------------------------------------------------
// Response bodies. The record's own struct lives in record.ts; what superstruct hides in
// refinements is annotated here for the published schema.

annotate(FactoryRecordStruct.schema.id, { pattern: FACTORY_ID_PATTERN.source });
annotate(FactoryRecordStruct.schema.country, { pattern: '^[A-Z]{2}$' });
annotate(FactoryRecordStruct.schema.name, { minLength: 1 });
annotate(FactoryRecordStruct.schema.sources, { minItems: 1 });
annotate(IsoDateStruct, { format: 'date' });

const Count = annotate(integer(), { minimum: 0 });
const Counts = annotate(record(string(), integer()), { additionalProperties: { type: 'integer', minimum: 0 } });

/** Attribution and use rules (spec §1.2, §1.5), carried by every body that carries records. */
export const AttributionStruct = object({
  notice: string(),
  use_rules: array(string()),
  dataset_date: IsoDateStruct,
  sources: array(SourceRefStruct),
});

/** GET /api/v1/factories and search_factories. */
export const SearchResultStruct = object({
  total: Count,
  next_offset: annotate(nullable(integer()), { minimum: 0 }),
  factories: array(FactoryRecordStruct),
  attribution: AttributionStruct,
});

/** GET /api/v1/stats and registry_stats. */
export const StatsStruct = object({
  dataset_date: IsoDateStruct,
  total: Count,
  by_country: Counts,
  by_category: Counts,
  by_contact: Counts,
  by_source: Counts,
  attribution: AttributionStruct,
});

/** The result of get_factory: the record and its attribution. */
export const FactoryResultStruct = object({
  factory: FactoryRecordStruct,
  attribution: AttributionStruct,
});

/** The export: this header, then `records` (the export is itself a dataset file mesh can serve). */
export const ExportStruct = object({
  generated: IsoDateStruct,
  sources: array(SourceRefStruct),
  attribution: AttributionStruct,
  total: Count,
  records: array(FactoryRecordStruct),
});

const FieldErrorStruct = object({ name: string(), detail: string() });

/** RFC 9457 problem details as this service writes them; `errors` names each bad parameter or field. */
export const ProblemStruct = type({
  type: string(),
  title: string(),
  status: annotate(integer(), { minimum: 400, maximum: 599 }),
  detail: string(),
  errors: optional(array(FieldErrorStruct)),
});

/** The 503 body: problem details with `factories: null`, never an empty list. */
export const UnavailableStruct = object({
  type: string(),
  title: string(),
  status: literal(503),
  detail: string(),
  factories: literal(null),
});

/** The receipt of POST /api/v1/submissions. */
export const ReceiptStruct = object({
  id: annotate(string(), { pattern: SUBMISSION_ID_PATTERN.source }),
  token: annotate(string(), { minLength: 43, description: 'Keep it: it is shown once and needed to read the status.' }),
  status_url: string(),
  status: enums(['received']),
});

/** GET /api/v1/submissions/{id}. */
export const SubmissionStatusStruct = object({
  id: annotate(string(), { pattern: SUBMISSION_ID_PATTERN.source }),
  kind: enums(SUBMISSION_KINDS),
  record_id: nullable(string()),
  company: string(),
  status: enums(['received']),
  received: annotate(string(), { format: 'date-time' }),
});
