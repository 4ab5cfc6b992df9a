/**
 * The HTML of the submission form, its receipt and status pages: plain forms that work without
 * JavaScript, with every interpolated value escaped. Pages carry a strict Content-Security-Policy
 * (no scripts at all) and are never cached, since a receipt shows a secret token.
 */

import type { FieldError } from '../http/problem.ts';
import { KIND_RULES, SUBMISSION_KINDS, type SubmissionKind } from '../http/schemas.ts';

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Text safe inside HTML content and double-quoted attributes. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (ch) => ESCAPES[ch]!);
}

/** Headers of every page: HTML, no scripts, not framed, not cached, no token leaking through Referer. */
export const PAGE_HEADERS: Readonly<Record<string, string>> = {
  'content-type': 'text/html; charset=utf-8',
  'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
};

const STYLE = `body{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:2rem auto;padding:0 1rem}
label{display:block;margin-top:1rem;font-weight:600}input,select,textarea{width:100%;font:inherit;padding:.4rem;box-sizing:border-box}
button{margin-top:1.5rem;font:inherit;padding:.5rem 1.5rem}.errors{border:2px solid #b00;padding:.5rem 1rem}.hint{color:#555;font-size:.9rem}
code{word-break:break-all}`;

function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${escapeHtml(title)}</title><style>${STYLE}</style></head>
<body><h1>${escapeHtml(title)}</h1>
${body}
</body></html>
`;
}

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
    `<p>Ask to join the directory, or to correct or remove a record. Your request is stored privately for review:
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
</form>`,
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

/** True when the client prefers an HTML page to JSON (a browser posting the form). */
export function wantsHtml(request: Request): boolean {
  const accept = request.headers.get('accept') ?? '';
  return /\btext\/html\b/.test(accept) && !/^\s*application\/(problem\+)?json\b/.test(accept);
}
