/**
 * POST /api/v1/submissions and GET /api/v1/submissions/{id}: join, correction and removal requests,
 * validated, stored privately for review and answered with a receipt. Nothing here publishes
 * anything or touches the search index.
 *
 * Reading a status needs the receipt's token (`Authorization: Bearer` or `?token=`). A missing or
 * wrong token and an unknown id get the same 401, so the answer never tells whether a submission
 * exists; a string that cannot be a submission id gets 404.
 */

import { HttpProblem } from '../../core/web/problem.ts';
import { DuplicateMemberError, parseStrictJson } from '../../core/web/strict-json.ts';
import { checkDeclaredLength, readBody } from '../http/body.ts';
import type { Clock, LoadedData } from '../http/data-source.ts';
import { parseQuery, validateParams } from '../http/params.ts';
import { type FieldError, ProblemError } from '../http/problem.ts';
import { KIND_RULES, SUBMISSION_FIELDS, SUBMISSION_ID_PATTERN, SUBMISSION_TOKEN_PARAM, type SubmissionKind } from '../http/schemas.ts';
import { PAGE_HEADERS, wantsHtml } from '../pages/layout.ts';
import { type FormValues, formPage, receiptPage, statusPage } from './pages.ts';
import type { StoredSubmission, SubmissionStore } from './store.ts';
import { hashToken, newSubmissionId, newToken, tokenMatches } from './token.ts';

export interface SubmissionRoutesContext {
  readonly store: SubmissionStore;
  readonly clock: Clock;
  /** The loaded dataset (to check a record id exists); throws the 503 problem when unavailable. */
  readonly requireData: () => Promise<LoadedData>;
  /** Largest body accepted, in bytes. */
  readonly bodyLimit: number;
  /** Told about store failures (the client gets a 503 without the details). */
  readonly onError: (error: unknown) => void;
}

interface SubmissionInput {
  kind: SubmissionKind;
  record_id?: string;
  company: string;
  email: string;
  message?: string;
}

// Seconds a client should wait after a store failure before sending again.
const STORE_RETRY_SECONDS = 5;

function mediaType(request: Request): string {
  return (request.headers.get('content-type') ?? '').split(';', 1)[0]!.trim().toLowerCase();
}

// Text is trimmed before any check, so a value of spaces is as empty as no value.
function fieldValue(value: unknown): unknown {
  return typeof value === 'string' ? value.trim() : value;
}

/**
 * Reads the body into field values. Empty fields count as absent: a form sends every input, filled
 * or not. The values live in an object without a prototype, so `__proto__` is a field name like
 * any other (and refused as unknown) rather than a way to set the object's prototype.
 */
async function readFields(request: Request, limit: number): Promise<Record<string, unknown>> {
  // 413 comes before every other check on the request, the media type's included.
  checkDeclaredLength(request, limit);
  const type = mediaType(request);
  if (type !== 'application/x-www-form-urlencoded' && type !== 'application/json') {
    throw new ProblemError(
      'unsupported-media-type',
      `send application/x-www-form-urlencoded or application/json, not ${JSON.stringify(type || 'no content type')}`,
    );
  }
  const bytes = await readBody(request, limit);
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new ProblemError('invalid-body', 'the body is not UTF-8');
  }
  const fields: Record<string, unknown> = Object.create(null);
  if (type === 'application/json') {
    let value: unknown;
    try {
      value = parseStrictJson(text);
    } catch (error) {
      // A member given twice is refused as a form field given twice is: JSON.parse would keep the last.
      if (error instanceof DuplicateMemberError) {
        throw new ProblemError('invalid-body', `${JSON.stringify(error.path)} given more than once`, {
          errors: [{ name: error.path, detail: 'given more than once' }],
        });
      }
      throw new ProblemError('invalid-body', `the body is not JSON: ${(error as Error).message}`);
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      throw new ProblemError('invalid-body', 'the body must be a JSON object of fields');
    }
    for (const [name, raw] of Object.entries(value)) {
      const field = fieldValue(raw);
      if (field !== '' && field !== null) fields[name] = field;
    }
    return fields;
  }
  for (const [name, raw] of new URLSearchParams(text)) {
    if (Object.hasOwn(fields, name)) {
      throw new ProblemError('invalid-body', `${JSON.stringify(name)} given more than once`, { errors: [{ name, detail: 'given more than once' }] });
    }
    const field = raw.trim();
    if (field !== '') fields[name] = field;
  }
  return fields;
}

/** The cross-field rules of each kind, then the record's existence for a correction or removal. */
async function checkKindRules(input: SubmissionInput, ctx: SubmissionRoutesContext): Promise<void> {
  const rules = KIND_RULES[input.kind];
  const errors: FieldError[] = [];
  if (rules.record_id === 'required' && input.record_id === undefined) {
    errors.push({ name: 'record_id', detail: `record_id is required for a ${input.kind}` });
  }
  if (rules.record_id === 'forbidden' && input.record_id !== undefined) {
    errors.push({ name: 'record_id', detail: `record_id is not taken for a ${input.kind}` });
  }
  if (rules.message === 'required' && input.message === undefined) {
    errors.push({ name: 'message', detail: `message is required for a ${input.kind}: say what to correct` });
  }
  if (errors.length === 0 && input.record_id !== undefined) {
    const data = await ctx.requireData();
    if (data.index.get(input.record_id) === undefined) {
      errors.push({ name: 'record_id', detail: `the directory has no record ${input.record_id}` });
    }
  }
  if (errors.length > 0) throw new ProblemError('invalid-body', errors.map((e) => e.detail).join('; '), { errors });
}

function formValues(fields: Record<string, unknown>): FormValues {
  const values: FormValues = {};
  for (const name of ['kind', 'record_id', 'company', 'email', 'message'] as const) {
    if (typeof fields[name] === 'string') values[name] = fields[name];
  }
  return values;
}

function statusUrl(request: Request, id: string): string {
  return new URL(`/api/v1/submissions/${id}`, request.url).href;
}

/** POST /api/v1/submissions. */
export async function createSubmission(request: Request, ctx: SubmissionRoutesContext): Promise<Response> {
  const html = wantsHtml(request);
  const fields = await readFields(request, ctx.bodyLimit);
  let input: SubmissionInput;
  try {
    input = validateParams<SubmissionInput>(SUBMISSION_FIELDS, fields, 'json', 'invalid-body');
    await checkKindRules(input, ctx);
  } catch (error) {
    // A field the client can mend (a 400): a form user gets the form again, with each error beside its field.
    if (html && error instanceof HttpProblem && error.status === 400) {
      const errors = (error.extra.errors as FieldError[] | undefined) ?? [{ name: '', detail: error.message }];
      return new Response(formPage(formValues(fields), errors), { status: error.status, headers: PAGE_HEADERS });
    }
    throw error;
  }
  const id = newSubmissionId();
  const token = newToken();
  const stored: StoredSubmission = {
    id,
    token_sha256: await hashToken(token),
    kind: input.kind,
    record_id: input.record_id ?? null,
    company: input.company,
    email: input.email,
    message: input.message ?? '',
    status: 'received',
    received: new Date(ctx.clock.now()).toISOString(),
  };
  try {
    await ctx.store.put(stored);
  } catch (error) {
    ctx.onError(error);
    throw new ProblemError(
      'submissions-unavailable',
      'the submission could not be stored; nothing was kept',
      {},
      { 'retry-after': String(STORE_RETRY_SECONDS) },
    );
  }
  const receipt = { id, token, status_url: statusUrl(request, id), status: 'received' as const };
  const headers = { location: receipt.status_url, 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' };
  if (html) return new Response(receiptPage(receipt), { status: 201, headers: { ...PAGE_HEADERS, ...headers } });
  return Response.json(receipt, { status: 201, headers });
}

function presentedToken(request: Request): string | undefined {
  // The query is checked whichever way the token comes: an unknown parameter is 400 everywhere.
  const query = parseQuery<{ token?: string }>([SUBMISSION_TOKEN_PARAM], new URL(request.url).searchParams);
  const authorization = request.headers.get('authorization');
  if (authorization !== null) {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    return match ? match[1] : undefined;
  }
  return query.token;
}

// Compared against when the id is unknown, so an unknown id costs the same time as a wrong token.
const NO_SUCH_HASH = '0'.repeat(64);

function unauthorized(detail: string): ProblemError {
  return new ProblemError('unauthorized', detail, {}, { 'www-authenticate': 'Bearer realm="submissions"' });
}

/** GET /api/v1/submissions/{id}. */
export async function submissionStatus(request: Request, id: string, ctx: SubmissionRoutesContext): Promise<Response> {
  if (!SUBMISSION_ID_PATTERN.test(id)) throw new ProblemError('not-found', 'no submission can have this id');
  const token = presentedToken(request);
  if (token === undefined) throw unauthorized('send the receipt\'s token as "Authorization: Bearer <token>" or ?token=');
  let stored: StoredSubmission | undefined;
  try {
    stored = await ctx.store.get(id);
  } catch (error) {
    ctx.onError(error);
    throw new ProblemError('submissions-unavailable', 'the submission store could not be read', {}, { 'retry-after': String(STORE_RETRY_SECONDS) });
  }
  const matches = await tokenMatches(token, stored?.token_sha256 ?? NO_SUCH_HASH);
  if (!stored || !matches) throw unauthorized('this token does not open this submission');
  const status = {
    id: stored.id,
    kind: stored.kind,
    record_id: stored.record_id,
    company: stored.company,
    status: stored.status,
    received: stored.received,
  };
  const headers = { 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' };
  if (wantsHtml(request)) return new Response(statusPage(status), { status: 200, headers: { ...PAGE_HEADERS, ...headers } });
  return Response.json(status, { headers });
}
