/**
 * The operator's page (docs/operator.md): the node's own view of itself, read from its HTTP API in
 * the browser. The JSON routes are read every few seconds; the chain and a job's output come from
 * their event streams. Reading needs no token; stopping a job does, and the operator gives it to
 * this tab, which keeps it in memory only.
 */
import { formatCredits } from '../../core/encoding/amount.ts';
import type { BlockEvent } from '../../core/ledger/block.ts';
import { ChainWatch, projectCoordinates, shortId } from './view.ts';

// The API's answers, as far as the page reads them (docs/node-api.md).
interface Status {
  node_id: string;
  height: number;
  balance: string;
  free: string;
  locked_bids: string;
  locked_channels: string;
  bond: string;
  weight: string;
  work_earned: string;
  unbonding: string;
  unbond_release_height: number | null;
}
interface Peer {
  node_id: string;
  remote_addr: string;
  direction: string;
  height: number | null;
  rtt_ms: number | null;
}
interface Coordinate {
  vec: number[];
}
interface Netgraph {
  coordinate: Coordinate;
  error: number;
  coordinates: { node_id: string; coordinate: Coordinate }[];
  mesh: { median_rtt_ms: number | null; reachable_frac: number | null; regions: number };
}
interface JobSummary {
  job_id: string;
  status: string;
  payer: string;
  host: string | null;
  role: 'payer' | 'host';
  cost: string | null;
  bid: string;
}
interface JobView extends JobSummary {
  image: string;
  cmd: string[] | null;
  refusals: { host: string; reason: string }[];
}
interface Channel {
  channel_id: string;
  role: 'payer' | 'host';
  payer: string;
  host: string;
  status: string;
  capacity: string;
  cumulative: string;
  expiry_height: number;
}
interface Fabric {
  nodes: number;
  cpu_cores: number;
  cpu_gflops: number;
  gpus: number;
  gpu_vram_mb: number;
  tokens_per_sec: number;
  storage_free_gb: number;
  mesh: { reachable_frac: number | null };
}
interface LogLine {
  seq: number;
  stream: 'stdout' | 'stderr';
  text: string;
}

const REFRESH_MS = 3000;
const RECENT_BLOCKS = 10;
const WATCHED_BLOCKS = 50;
// Lines of a job's output the page shows; the oldest go first.
const LOG_LINES = 1000;
// The jobs that can still be stopped (docs/node-api.md "DELETE /jobs/:id").
const STOPPABLE = new Set(['pending', 'running']);
const NO_PRODUCER = '0'.repeat(64);

const $ = <T extends HTMLElement = HTMLElement>(id: string): T => {
  const element = document.getElementById(id);
  if (element === null) throw new Error(`the page lacks #${id}`);
  return element as T;
};
const credits = (amount: string | null): string => (amount === null ? '–' : formatCredits(BigInt(amount)));
const number = (value: number | null, digits = 0): string =>
  value === null ? '–' : value.toLocaleString('en', { maximumFractionDigits: digits, minimumFractionDigits: 0 });

function say(id: string, kind: 'ok' | 'error' | 'info', text: string): void {
  const element = $(id);
  element.dataset.kind = kind;
  element.textContent = text;
}

/** An element with attributes and children (text or elements). */
function el(tag: string, attrs: Record<string, string> = {}, ...children: (string | Node)[]): HTMLElement {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) element.setAttribute(name, value);
  element.append(...children);
  return element;
}

/** `<td>` of a node id: short, the whole id as its title; "this node" for our own. */
function idCell(id: string | null): HTMLElement {
  if (id === null) return el('td', {}, '–');
  if (id === self) return el('td', {}, 'this node');
  // The genesis block has no producer.
  if (id === NO_PRODUCER) return el('td', {}, 'genesis');
  return el('td', { class: 'mono', title: id }, shortId(id));
}

// Rows are rebuilt only when what they show changed, and the focused button keeps its focus.
const shown = new Map<string, string>();
function fillRows(table: HTMLTableElement, key: unknown, rows: () => HTMLElement[]): void {
  const text = JSON.stringify(key);
  if (shown.get(table.id) === text) return;
  shown.set(table.id, text);
  const focused = document.activeElement instanceof HTMLElement ? document.activeElement.dataset.key : undefined;
  table.tBodies[0]!.replaceChildren(...rows());
  if (focused !== undefined) table.querySelector<HTMLElement>(`[data-key="${focused}"]`)?.focus();
}

async function read<T>(path: string): Promise<T> {
  const response = await fetch(path, { headers: { accept: 'application/json' } });
  if (!response.ok) throw new Error(`${path}: ${response.status}`);
  return (await response.json()) as T;
}

let self = '';
let token: string | null = null;

// --- The chain, from /blocks/stream -------------------------------------------------------------

const chain = new ChainWatch(WATCHED_BLOCKS);
let chainDrawn = false;

function drawChain(): void {
  chainDrawn = false;
  const recent = chain.recent(RECENT_BLOCKS);
  const tip = recent[0];
  if (tip !== undefined) {
    $('height').textContent = number(tip.index);
    $('tip').textContent = shortId(tip.hash);
    $('tip').title = tip.hash;
  }
  const producers = chain.producers();
  $('producers-span').textContent = String(producers.reduce((sum, p) => sum + p.blocks, 0));
  fillRows($<HTMLTableElement>('producers'), [self, producers], () =>
    producers.map((p) => el('tr', {}, idCell(p.miner), el('td', { class: 'num' }, String(p.blocks)))),
  );
  fillRows($<HTMLTableElement>('blocks'), [self, recent.map((b) => b.hash)], () =>
    recent.map((b) =>
      el(
        'tr',
        {},
        el('td', { class: 'num' }, String(b.index)),
        idCell(b.miner),
        el('td', { class: 'num' }, String(b.tx_count)),
        el('td', {}, new Date(b.timestamp * 1000).toLocaleTimeString('en-GB')),
      ),
    ),
  );
  const forks = chain.forks();
  $('forks-none').hidden = forks.length > 0;
  $('forks').replaceChildren(
    ...forks.map((f) =>
      el(
        'li',
        {},
        `At height ${f.height}, ${f.depth} block${f.depth === 1 ? '' : 's'} replaced (${shortId(f.replaced)} by ${shortId(f.by)}), ${new Date(f.at).toLocaleTimeString('en-GB')}`,
      ),
    ),
  );
}

async function followChain(): Promise<void> {
  const beacon = await read<{ height: number }>('/beacon');
  // An EventSource reconnects by itself, resuming after the last height it saw (Last-Event-ID).
  const blocks = new EventSource(`/blocks/stream?min_height=${Math.max(0, beacon.height - WATCHED_BLOCKS + 1)}`);
  blocks.onmessage = (event: MessageEvent<string>) => {
    chain.add(JSON.parse(event.data) as BlockEvent, Date.now());
    // Blocks of a replay come in a burst: draw once per frame.
    if (!chainDrawn) {
      chainDrawn = true;
      requestAnimationFrame(drawChain);
    }
  };
}

// --- Peers and their map, from /peers and /netgraph ---------------------------------------------

const SVG = 'http://www.w3.org/2000/svg';
function svg(tag: string, attrs: Record<string, string | number>, text?: string): SVGElement {
  const element = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) element.setAttribute(name, String(value));
  if (text !== undefined) element.textContent = text;
  return element;
}

function drawPeers(peers: Peer[], graph: Netgraph): void {
  $('peer-count').textContent = String(peers.length);
  $('coord-error').textContent = number(graph.error, 2);
  $('mesh-rtt').textContent = graph.mesh.median_rtt_ms === null ? '–' : `${number(graph.mesh.median_rtt_ms, 1)} ms`;
  $('mesh-regions').textContent = String(graph.mesh.regions);
  $('peers-none').hidden = peers.length > 0;
  $('peers').hidden = peers.length === 0;
  const sorted = [...peers].sort((a, b) => (a.node_id < b.node_id ? -1 : 1));
  fillRows($<HTMLTableElement>('peers'), sorted, () =>
    sorted.map((p) =>
      el(
        'tr',
        {},
        idCell(p.node_id),
        el('td', { class: 'num' }, number(p.rtt_ms, 1)),
        el('td', { class: 'num' }, number(p.height)),
        el('td', {}, p.direction),
        // The peer's id is in the first column already.
        el('td', { class: 'mono' }, p.remote_addr.replace(/\/p2p\/[^/]+$/, '')),
      ),
    ),
  );

  const points = projectCoordinates([{ id: self, vec: graph.coordinate.vec }, ...graph.coordinates.map((c) => ({ id: c.node_id, vec: c.coordinate.vec }))]);
  const at = new Map(points.map((p) => [p.id, p]));
  const me = at.get(self)!;
  // Centred on this node, scaled so the farthest point sits at 70 % of the way to the edge.
  const reach = Math.max(0.001, ...points.map((p) => Math.hypot(p.x - me.x, p.y - me.y)));
  const scale = 70 / reach;
  const place = (id: string): { x: number; y: number } => {
    const p = at.get(id)!;
    return { x: (p.x - me.x) * scale, y: (p.y - me.y) * scale };
  };
  const rtt = new Map(peers.map((p) => [p.node_id, p.rtt_ms]));
  const layer: SVGElement[] = [];
  for (const p of points) {
    if (p.id === self || !rtt.has(p.id)) continue;
    const to = place(p.id);
    layer.push(svg('line', { x1: 0, y1: 0, x2: to.x, y2: to.y }));
    const ms = rtt.get(p.id);
    // The round trip above the middle of its line.
    if (ms !== null && ms !== undefined) layer.push(svg('text', { x: to.x / 2, y: to.y / 2 - 4, class: 'rtt' }, `${number(ms, 1)} ms`));
  }
  for (const p of points) {
    const { x, y } = place(p.id);
    const kind = p.id === self ? 'self' : rtt.has(p.id) ? 'peer' : 'known';
    const dot = svg('circle', { cx: x, cy: y, r: kind === 'self' ? 4 : 3, class: kind });
    dot.append(svg('title', {}, p.id === self ? `this node ${p.id}` : p.id));
    // This node's label below it, the others' above: two close nodes keep both labels readable.
    layer.push(dot, svg('text', { x, y: p.id === self ? y + 12 : y - 7 }, p.id === self ? 'this node' : shortId(p.id)));
  }
  $('map').replaceChildren(...layer);
  $('map-caption').textContent =
    `Network coordinates of ${points.length} node${points.length === 1 ? '' : 's'}: this node in blue at the centre, ` +
    `its peers in green with their measured round trips, other nodes it knows in grey. ` +
    `The edge of the map is about ${number(reach / 0.7, 2)} ms away.`;
}

// --- Balance, bond and channels, from /status and /channels -------------------------------------

function drawAccount(status: Status, channels: Channel[]): void {
  $('balance').textContent = credits(status.balance);
  $('free').textContent = credits(status.free);
  $('locked-bids').textContent = credits(status.locked_bids);
  $('locked-channels').textContent = credits(status.locked_channels);
  $('bond').textContent = credits(status.bond);
  $('unbonding').textContent =
    status.unbond_release_height === null ? credits(status.unbonding) : `${credits(status.unbonding)} (free at ${status.unbond_release_height})`;
  $('work').textContent = credits(status.work_earned);
  $('weight').textContent = credits(status.weight);
  $('channels-none').hidden = channels.length > 0;
  $('channels').hidden = channels.length === 0;
  fillRows($<HTMLTableElement>('channels'), channels, () =>
    channels.map((c) =>
      el(
        'tr',
        {},
        el('td', { class: 'mono', title: c.channel_id }, shortId(c.channel_id)),
        el('td', {}, c.role),
        idCell(c.role === 'payer' ? c.host : c.payer),
        el('td', {}, c.status),
        el('td', { class: 'num' }, credits(c.capacity)),
        el('td', { class: 'num' }, credits(c.cumulative)),
        el('td', { class: 'num' }, String(c.expiry_height)),
      ),
    ),
  );
}

// --- Jobs, from /jobs, and a job's output from /jobs/:id/logs?follow=1 ----------------------------

function jobRow(job: JobSummary): HTMLElement {
  const logs = el(
    'button',
    { type: 'button', class: 'small secondary', 'data-key': `logs-${job.job_id}`, 'aria-label': `Output of job ${shortId(job.job_id)}` },
    'Output',
  );
  logs.addEventListener('click', () => void openLog(job.job_id));
  const actions = el('td', {}, logs);
  if (STOPPABLE.has(job.status)) {
    const stop = el('button', { type: 'button', class: 'small', 'data-key': `stop-${job.job_id}`, 'aria-label': `Stop job ${shortId(job.job_id)}` }, 'Stop');
    (stop as HTMLButtonElement).disabled = token === null;
    if (token === null) stop.title = 'Give the API token under Actions first';
    stop.addEventListener('click', () => void stopJob(job.job_id));
    actions.append(stop);
  }
  return el(
    'tr',
    {},
    el('td', { class: 'mono', title: job.job_id }, shortId(job.job_id)),
    // Second, so a phone shows the buttons without scrolling sideways.
    actions,
    el('td', { class: 'reason' }, job.status),
    idCell(job.role === 'payer' ? job.host : job.payer),
    el('td', { class: 'num' }, credits(job.bid)),
    el('td', { class: 'num' }, credits(job.cost)),
  );
}

function drawJobs(jobs: JobSummary[]): void {
  $('jobs-none').hidden = jobs.length > 0;
  for (const role of ['payer', 'host'] as const) {
    const mine = jobs.filter((j) => j.role === role);
    const table = $<HTMLTableElement>(`jobs-${role}`);
    table.hidden = mine.length === 0;
    fillRows(table, [mine, token !== null], () => mine.map(jobRow));
  }
}

let logStream: EventSource | null = null;

async function openLog(jobId: string): Promise<void> {
  logStream?.close();
  const lines = $('log-lines');
  lines.replaceChildren();
  $('log-box').hidden = false;
  $('log-title').textContent = `Output of job ${shortId(jobId)}`;
  $('log-state').textContent = 'Following…';
  const job = await read<JobView>(`/jobs/${jobId}`).catch(() => null);
  if (job !== null && job.status === 'pending' && job.refusals.length > 0) {
    $('log-state').textContent = `Waiting for a host. ${job.refusals.map((r) => `${shortId(r.host)}: ${r.reason}`).join('; ')}`;
  }
  const stream = new EventSource(`/jobs/${jobId}/logs?follow=1`);
  logStream = stream;
  stream.onmessage = (event: MessageEvent<string>) => {
    const line = JSON.parse(event.data) as LogLine;
    lines.append(el('span', line.stream === 'stderr' ? { class: 'stderr' } : {}, `${line.text}\n`));
    while (lines.childNodes.length > LOG_LINES) lines.firstChild!.remove();
    lines.scrollTop = lines.scrollHeight;
    if ($('log-state').textContent === 'Following…') $('log-state').textContent = 'Following: new lines appear as the job writes them.';
  };
  stream.addEventListener('end', () => {
    stream.close();
    $('log-state').textContent = lines.childNodes.length === 0 ? 'The job wrote nothing.' : 'The output is complete.';
  });
  $('log-close').focus();
}

$('log-close').addEventListener('click', () => {
  logStream?.close();
  logStream = null;
  $('log-box').hidden = true;
});

async function stopJob(jobId: string): Promise<void> {
  if (token === null) return;
  const response = await fetch(`/jobs/${jobId}`, { method: 'DELETE', headers: { authorization: `Bearer ${token}` } });
  if (response.status === 204) say('jobs-message', 'ok', `Job ${shortId(jobId)} is stopping.`);
  else if (response.status === 401) {
    forgetToken('The node no longer takes that token: give it again.');
    say('jobs-message', 'error', 'Not stopped: the token was refused.');
  } else say('jobs-message', 'error', `Not stopped: ${((await response.json()) as { detail?: string }).detail ?? response.status}`);
  void refresh();
}

// --- The token ------------------------------------------------------------------------------------

// A token of another node, or none, is refused before the path is looked up (401); the right one
// reaches the path, where no job has the id of all zeros (404). So this asks without changing anything.
const NO_JOB = '0'.repeat(64);

$('token-form').addEventListener('submit', (event) => {
  event.preventDefault();
  const input = $<HTMLInputElement>('token');
  const given = input.value.trim();
  // The field never keeps the token: browsers remember what forms held.
  input.value = '';
  if (given === '') {
    input.setAttribute('aria-invalid', 'true');
    say('token-message', 'error', 'Paste the content of api.token.');
    return;
  }
  // A page that opened this one holds its window and, on this origin (the wallet's), could read
  // the token out of it: only a tab of its own takes one.
  if (window.opener !== null) {
    say('token-message', 'error', 'Another page opened this one: open http://127.0.0.1…/node in a tab of its own to allow actions.');
    return;
  }
  void (async () => {
    const answer = await fetch(`/jobs/${NO_JOB}`, { method: 'DELETE', headers: { authorization: `Bearer ${given}` } });
    if (answer.status === 401) {
      input.setAttribute('aria-invalid', 'true');
      say('token-message', 'error', "This is not this node's API token.");
      input.focus();
      return;
    }
    token = given;
    input.removeAttribute('aria-invalid');
    $('token-form').hidden = true;
    $('token-forget').hidden = false;
    say('token-message', 'ok', 'Actions allowed in this tab until it is closed or reloaded.');
    $('token-forget').focus();
    void refresh();
  })();
});

function forgetToken(text: string): void {
  token = null;
  $('token-form').hidden = false;
  $('token-forget').hidden = true;
  say('token-message', 'info', text);
  void refresh();
}
$('token-forget').addEventListener('click', () => {
  forgetToken('The token is forgotten.');
  $('token').focus();
});

// --- Fabric ---------------------------------------------------------------------------------------

function drawFabric(fabric: Fabric): void {
  $('fabric-nodes').textContent = number(fabric.nodes);
  $('fabric-cores').textContent = number(fabric.cpu_cores);
  $('fabric-gflops').textContent = number(fabric.cpu_gflops, 1);
  $('fabric-gpus').textContent = number(fabric.gpus);
  $('fabric-vram').textContent = number(fabric.gpu_vram_mb);
  $('fabric-tokens').textContent = number(fabric.tokens_per_sec, 1);
  $('fabric-storage').textContent = number(fabric.storage_free_gb, 1);
  $('fabric-reachable').textContent = fabric.mesh.reachable_frac === null ? '–' : `${number(fabric.mesh.reachable_frac * 100)} %`;
}

// --- Refresh ------------------------------------------------------------------------------------

function setStatus(state: 'online' | 'offline', text: string): void {
  const status = $('status');
  if (status.dataset.state === state && status.textContent === text) return;
  status.dataset.state = state;
  status.textContent = text;
}

let refreshing = false;
async function refresh(): Promise<void> {
  if (refreshing) return;
  refreshing = true;
  try {
    const [status, peers, graph, jobs, channels, fabric] = await Promise.all([
      read<Status>('/status'),
      read<{ peers: Peer[] }>('/peers'),
      read<Netgraph>('/netgraph'),
      read<JobSummary[]>('/jobs'),
      read<Channel[]>('/channels'),
      read<Fabric>('/fabric/stats'),
    ]);
    self = status.node_id;
    $('node-id').textContent = status.node_id;
    drawAccount(status, channels);
    drawPeers(peers.peers, graph);
    drawJobs(jobs);
    drawFabric(fabric);
    setStatus('online', 'Online');
  } catch {
    setStatus('offline', 'Offline: the node does not answer');
  } finally {
    refreshing = false;
  }
}

async function start(): Promise<void> {
  await refresh();
  followChain().catch(() => setStatus('offline', 'Offline: the node does not answer'));
  setInterval(() => void refresh(), REFRESH_MS);
}

void start();
