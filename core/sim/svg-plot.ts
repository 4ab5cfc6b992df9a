/**
 * Plain SVG plots for `mesh sim report`: lines over a shared x axis, and horizontal bars. No
 * script, no font beyond the viewer's sans-serif, numbers written with fixed digits, so the same
 * data gives the same bytes.
 */

export interface Line {
  readonly name: string;
  readonly points: readonly (readonly [number, number])[];
}

export interface LinePlot {
  readonly title: string;
  readonly x: string;
  readonly y: string;
  readonly lines: readonly Line[];
  /** A log scale on x (values ≤ 0 are put at the smallest positive one). */
  readonly logX?: boolean;
}

const WIDTH = 640;
const HEIGHT = 360;
const M = { left: 70, right: 150, top: 36, bottom: 48 };
const COLOURS = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#8c564b'];

const fixed = (n: number): string => (Math.round(n * 10) / 10).toString();

function escapeXml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** Round ticks across [lo, hi]: 1, 2 or 5 times a power of ten apart, about five of them. */
export function ticks(lo: number, hi: number): number[] {
  if (!(hi > lo)) return [lo];
  const raw = (hi - lo) / 5;
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw)!;
  const out: number[] = [];
  for (let t = Math.ceil(lo / step) * step; t <= hi + step / 1e6; t += step) out.push(Number((Math.round(t / power) * power).toPrecision(12)));
  return out;
}

function frame(title: string, body: string[]): string {
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${HEIGHT}" viewBox="0 0 ${WIDTH} ${HEIGHT}" font-family="sans-serif" font-size="12">`,
    `<rect width="${WIDTH}" height="${HEIGHT}" fill="white"/>`,
    `<text x="${WIDTH / 2}" y="20" text-anchor="middle" font-size="14">${escapeXml(title)}</text>`,
    ...body,
    '</svg>',
    '',
  ].join('\n');
}

/** Lines on linear axes (or a log x axis), with a legend on the right. */
export function linePlot(plot: LinePlot): string {
  const all = plot.lines.flatMap((l) => l.points);
  const positive = all.map(([x]) => x).filter((x) => x > 0);
  const tx = (x: number): number => (plot.logX ? Math.log10(Math.max(x, Math.min(...positive, 1))) : x);
  const xs = all.map(([x]) => tx(x));
  const ys = all.map(([, y]) => y);
  const x0 = xs.length ? Math.min(...xs) : 0;
  const x1 = xs.length ? Math.max(...xs, x0 + 1e-9) : 1;
  const y0 = Math.min(0, ...ys);
  const y1 = ys.length ? Math.max(...ys, y0 + 1e-9) : 1;
  const w = WIDTH - M.left - M.right;
  const h = HEIGHT - M.top - M.bottom;
  const px = (x: number): number => M.left + ((tx(x) - x0) / (x1 - x0 || 1)) * w;
  const py = (y: number): number => M.top + h - ((y - y0) / (y1 - y0 || 1)) * h;
  const body: string[] = [];
  body.push(`<rect x="${M.left}" y="${M.top}" width="${w}" height="${h}" fill="none" stroke="#888"/>`);
  const xTicks = plot.logX
    ? ticks(Math.floor(x0), Math.ceil(x1))
        .filter(Number.isInteger)
        .map((p) => 10 ** p)
    : ticks(x0, x1);
  for (const t of xTicks) {
    if (tx(t) < x0 - 1e-9 || tx(t) > x1 + 1e-9) continue;
    body.push(`<line x1="${fixed(px(t))}" y1="${M.top + h}" x2="${fixed(px(t))}" y2="${M.top + h + 4}" stroke="#888"/>`);
    body.push(`<text x="${fixed(px(t))}" y="${M.top + h + 17}" text-anchor="middle">${t}</text>`);
  }
  for (const t of ticks(y0, y1)) {
    body.push(`<line x1="${M.left - 4}" y1="${fixed(py(t))}" x2="${M.left + w}" y2="${fixed(py(t))}" stroke="#eee"/>`);
    body.push(`<text x="${M.left - 7}" y="${fixed(py(t) + 4)}" text-anchor="end">${t}</text>`);
  }
  body.push(`<text x="${M.left + w / 2}" y="${HEIGHT - 10}" text-anchor="middle">${escapeXml(plot.x)}</text>`);
  body.push(`<text transform="translate(16 ${M.top + h / 2}) rotate(-90)" text-anchor="middle">${escapeXml(plot.y)}</text>`);
  for (const [i, line] of plot.lines.entries()) {
    const colour = COLOURS[i % COLOURS.length]!;
    if (line.points.length > 0) {
      const d = line.points.map(([x, y], j) => `${j === 0 ? 'M' : 'L'}${fixed(px(x))} ${fixed(py(y))}`).join(' ');
      body.push(`<path d="${d}" fill="none" stroke="${colour}" stroke-width="2"/>`);
    }
    const ly = M.top + 10 + 18 * i;
    body.push(`<line x1="${WIDTH - M.right + 12}" y1="${ly}" x2="${WIDTH - M.right + 32}" y2="${ly}" stroke="${colour}" stroke-width="2"/>`);
    body.push(`<text x="${WIDTH - M.right + 38}" y="${ly + 4}">${escapeXml(line.name)}</text>`);
  }
  return frame(plot.title, body);
}

/** Horizontal bars, one per label, the value written at the end of each. */
export function barPlot(plot: { readonly title: string; readonly unit: string; readonly bars: readonly (readonly [string, number])[] }): string {
  const labelWidth = 210;
  const w = WIDTH - labelWidth - 90;
  const rowHeight = Math.max(10, Math.min(24, (HEIGHT - M.top - 16) / Math.max(1, plot.bars.length)));
  const most = Math.max(1e-9, ...plot.bars.map(([, v]) => v));
  const body: string[] = [];
  for (const [i, [label, value]] of plot.bars.entries()) {
    const y = M.top + i * rowHeight;
    body.push(`<text x="${labelWidth - 6}" y="${fixed(y + rowHeight * 0.7)}" text-anchor="end">${escapeXml(label)}</text>`);
    body.push(`<rect x="${labelWidth}" y="${fixed(y + 2)}" width="${fixed((value / most) * w)}" height="${fixed(rowHeight - 4)}" fill="${COLOURS[0]}"/>`);
    body.push(`<text x="${fixed(labelWidth + (value / most) * w + 5)}" y="${fixed(y + rowHeight * 0.7)}">${value} ${escapeXml(plot.unit)}</text>`);
  }
  return frame(plot.title, body);
}
