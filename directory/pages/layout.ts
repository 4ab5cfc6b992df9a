/**
 * What every HTML page of the directory shares: escaping, the headers (a strict
 * Content-Security-Policy: no scripts at all, styles inline only, forms to this origin only), one
 * stylesheet and the frame around each page's content. Pages are plain server-rendered HTML with
 * GET and POST forms: they work without JavaScript, and escape every value they show.
 */

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Text safe inside HTML content and double-quoted attributes. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (ch) => ESCAPES[ch]!);
}

/**
 * Headers of every page: HTML, no scripts, not framed, no Referer (a receipt's link carries a
 * token), not cached (a receipt shows its token once). `img-src data:` is for the empty icon, which
 * keeps browsers from asking for /favicon.ico.
 */
export const PAGE_HEADERS: Readonly<Record<string, string>> = {
  'content-type': 'text/html; charset=utf-8',
  'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
};

const STYLE = `:root{--ink:#1d232a;--muted:#5a636e;--line:#d5dae0;--accent:#0b5cad;--bg:#f6f7f9;--warn:#b00020}
*{box-sizing:border-box}body{margin:0;font:16px/1.5 system-ui,sans-serif;color:var(--ink);background:var(--bg)}
header.site{background:#fff;border-bottom:1px solid var(--line)}
header.site div,main,footer.site{max-width:60rem;margin:0 auto;padding:0 1rem}
header.site div{display:flex;flex-wrap:wrap;gap:.25rem 1.5rem;align-items:baseline;padding-top:.75rem;padding-bottom:.75rem}
header.site a.home{font-weight:700;font-size:1.15rem;color:var(--ink);text-decoration:none}
header.site nav{display:flex;flex-wrap:wrap;gap:.25rem 1rem}
a{color:var(--accent)}h1{font-size:1.6rem;margin:1.5rem 0 .5rem}
main{padding-bottom:2rem}.panel{background:#fff;border:1px solid var(--line);border-radius:6px;padding:1rem;margin:1rem 0}.panel>:first-child{margin-top:0}
label{display:block;font-weight:600;margin-top:.75rem}
input,select,textarea{width:100%;font:inherit;padding:.45rem .5rem;border:1px solid #9aa3ad;border-radius:4px;background:#fff;color:inherit}
input:focus,select:focus,textarea:focus,button:focus,a:focus{outline:3px solid #7fb2e5;outline-offset:1px}
button{font:inherit;font-weight:600;padding:.5rem 1.4rem;border:0;border-radius:4px;background:var(--accent);color:#fff;cursor:pointer;margin-top:1rem}
.hint{color:var(--muted);font-size:.9rem;margin:.25rem 0 0}.errors{border:2px solid var(--warn);border-radius:6px;background:#fff;padding:.5rem 1rem;margin:1rem 0}
code{word-break:break-all;font-size:.9em}dl{margin:.5rem 0}dt{font-weight:600}dd{margin:0 0 .5rem}
footer.site{color:var(--muted);font-size:.9rem;border-top:1px solid var(--line);padding-top:1rem;padding-bottom:2rem}
footer.site ul{padding-left:1.2rem}`;

/** Site navigation: the page a link leads to is marked current. */
const NAV: readonly [href: string, label: string][] = [
  ['/', 'Search'],
  ['/submit', 'Join, correct or remove'],
  ['/openapi.json', 'API'],
  ['/directory.json', 'Export'],
];

/** A whole page: `body` is HTML the caller has escaped; `style` adds rules for that page only. */
export function page(title: string, body: string, options: { current?: string; style?: string; footer?: string } = {}): string {
  const nav = NAV.map(([href, label]) => `<a href="${href}"${href === options.current ? ' aria-current="page"' : ''}>${escapeHtml(label)}</a>`).join('');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${escapeHtml(title)}</title><link rel="icon" href="data:,"><style>${STYLE}${options.style ?? ''}</style></head>
<body><header class="site"><div><a class="home" href="/">Manufacturer directory</a><nav aria-label="Site">${nav}</nav></div></header>
<main><h1>${escapeHtml(title)}</h1>
${body}
</main>${options.footer === undefined ? '' : `<footer class="site">${options.footer}</footer>`}
</body></html>
`;
}

/** True when the client prefers an HTML page to JSON (a browser). */
export function wantsHtml(request: Request): boolean {
  const accept = request.headers.get('accept') ?? '';
  return /\btext\/html\b/.test(accept) && !/^\s*application\/(problem\+)?json\b/.test(accept);
}
