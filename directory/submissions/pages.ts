/**
 * The HTML of the submission form, its receipt and status pages, in the frame and style every page
 * shares (../pages/layout.ts): plain forms that work without JavaScript, every value escaped.
 */

import type { FieldError } from '../http/problem.ts';
import { KIND_RULES, SUBMISSION_KINDS, type SubmissionKind } from '../http/schemas.ts';
import { escapeHtml, page } from '../pages/layout.ts';

/** Values a form shows again after a refused post (or pre-filled from the query). */
export type FormValues = Partial<Record<'kind' | 'record_id' | 'company' | 'email' | 'message', string>>;

const KIND_LABELS: Record<SubmissionKind, string> = {
  join: 'Join the directory',
  correction: 'Correct a record',
  removal: 'Remove a record',
};

/** GET /submit, and the form again with its errors after a refused post. */
export function formPage(values: FormValues = {}, errors: readonly FieldError[] = []): string {
  const v = (name: keyof FormValues): string => escapeHtml(values[name] ?? '');
  const options = SUBMISSION_KINDS.map((kind) => `<option value="${kind}"${values.kind === kind ? ' selected' : ''}>${KIND_LABELS[kind]}</option>`).join('');
  const needsId = SUBMISSION_KINDS.filter((k) => KIND_RULES[k].record_id === 'required').join(' or ');
  const errorList =
    errors.length === 0
      ? ''
      : `<div class="errors" role="alert"><p>Please fix:</p><ul>${errors.map((e) => `<li>${escapeHtml(e.detail)}</li>`).join('')}</ul></div>`;
  return page(
    'Company submission',
    `<div class="panel"><p>Ask to join the directory, or to correct or remove a record. Your request is stored privately for review:
it publishes nothing, and it is not a verified membership. You get a receipt with a token to check its status.</p>
${errorList}
<form method="post" action="/api/v1/submissions">
<label for="kind">Request</label><select id="kind" name="kind" required>${options}</select>
<label for="record_id">Record id</label><input id="record_id" name="record_id" value="${v('record_id')}" maxlength="40"
 placeholder="epa-110000000000, wd-Q123 or cn-…" pattern="(cn-[0-9a-f]{20}|wd-Q[1-9][0-9]*|epa-[0-9]{12})">
<p class="hint">Needed for a ${needsId}; leave empty when joining.</p>
<label for="company">Company name</label><input id="company" name="company" value="${v('company')}" maxlength="200" required>
<label for="email">Contact email (for the review only, never published)</label>
<input id="email" name="email" type="email" value="${v('email')}" maxlength="254" required>
<label for="message">Message</label><textarea id="message" name="message" rows="6" maxlength="4000">${v('message')}</textarea>
<p class="hint">What to add, correct or remove, and why. Required for a correction.</p>
<button type="submit">Send request</button>
</form></div>`,
    { current: '/submit' },
  );
}

/** The HTML receipt after a form post: the token is shown once, with a link that carries it. */
export function receiptPage(receipt: { id: string; token: string; status_url: string }): string {
  const link = `${receipt.status_url}?token=${encodeURIComponent(receipt.token)}`;
  return page(
    'Request received',
    `<p>Your request is stored for review. Nothing is published until a reviewer acts on it.</p>
<p>Request id: <code>${escapeHtml(receipt.id)}</code></p>
<p>Token: <code>${escapeHtml(receipt.token)}</code></p>
<p><strong>Keep the token:</strong> it is shown only now, and it is needed to see the status.
Anyone holding it can read the status of this request.</p>
<p><a href="${escapeHtml(link)}">Status of this request</a></p>`,
  );
}

/** GET /api/v1/submissions/{id} for a browser. */
export function statusPage(status: { id: string; kind: string; record_id: string | null; company: string; status: string; received: string }): string {
  return page(
    'Request status',
    `<dl><dt>Request id</dt><dd><code>${escapeHtml(status.id)}</code></dd>
<dt>Request</dt><dd>${escapeHtml(status.kind)}${status.record_id ? ` of <code>${escapeHtml(status.record_id)}</code>` : ''}</dd>
<dt>Company</dt><dd>${escapeHtml(status.company)}</dd>
<dt>Status</dt><dd>${escapeHtml(status.status)}</dd>
<dt>Received</dt><dd>${escapeHtml(status.received)}</dd></dl>`,
  );
}

/** The page at a problem's type URI (`/problems/<code>`). */
export function problemPage(code: string, status: number, title: string, about: string): string {
  return page(title, `<p>HTTP status ${status}. Problem type <code>/problems/${escapeHtml(code)}</code>.</p><p>${escapeHtml(about)}</p>`);
}
