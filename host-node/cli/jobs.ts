/**
 * `mesh jobs`: the compute market from the command line, over the running node's /jobs routes
 * (docs/cli.md): run (bid, and with --follow stream the output and wait for the end), ls, show,
 * logs, stop and expire. Amounts are typed and shown in credits, never base units.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { JOB_LIMITS } from '../../core/api/input.ts';
import { formatAmount, formatCredits, parseAmount } from '../../core/encoding/amount.ts';
import type { JobStatus, JobSummary, JobView, LogEvent, Refusal } from '../../core/jobs/types.ts';
import { clientOptions, NodeClient } from './client.ts';
import { command, EXIT, entry, flag, type Io, list, option, type Parser, positional, UsageError } from './command.ts';
import { type IdKind, idPrefix, uniqueId } from './id-prefix.ts';
import { columns, fit, TABLE_WIDTH } from './table.ts';
import { credits, integer } from './values.ts';

/** How often `run --follow` asks for the job's status. */
const POLL_MS = 1000;
/** How long output may still arrive once the job has reached its end. */
const OUTPUT_GRACE_MS = 2000;
/** How long a failed job that ran may take to settle what it used before the command stops waiting. */
const COST_WAIT_MS = 30_000;

const json = flag("print the node's answer as JSON, as it is (amounts in base units)");

// ---------------------------------------------------------------------------------------------
// Values

/** `KEY=VALUE`, the key a variable name; the value may hold `=`. */
const envPair: Parser<[string, string]> = (text, name) => {
  const eq = text.indexOf('=');
  const key = eq < 0 ? text : text.slice(0, eq);
  if (eq < 0 || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(key)) {
    throw new UsageError(`${name} takes KEY=VALUE with KEY a variable name (a letter or _, then letters, digits or _), got ${JSON.stringify(text)}`);
  }
  return [key, text.slice(eq + 1)];
};

/** A job named by its id or the start of it, as `mesh jobs ls` shows it. */
export const jobRef: Parser<string> = idPrefix('a job id');

/** What DELETE /jobs/:id takes: a job id (or its start), a container id or a container name. */
const stopRef: Parser<string> = (text, name) => {
  if (!/^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/.test(text))
    throw new UsageError(`${name} must be a job id, a container id or a container name, got ${JSON.stringify(text)}`);
  return text;
};

const range = ([min, max]: readonly [number, number]): Parser<number> => integer(min, max);

// ---------------------------------------------------------------------------------------------
// Showing jobs

/** Whether the job has reached its end status (a failed job that ran may still settle what it used). */
export function isFinal(status: JobStatus): boolean {
  return status === 'settled' || status === 'expired' || status.startsWith('failed');
}

/** A job that ran and ended abnormally still settles: its cost comes within a few blocks. */
function awaitsCost(job: JobView): boolean {
  return job.status.startsWith('failed') && job.started_at !== null && job.cost === null;
}

const inCredits = (amount: string | null): string => (amount === null ? '-' : `${formatCredits(parseAmount(amount))}`);
const short = (id: string | null): string => (id === null ? '-' : id.slice(0, 16));
const time = (secs: number | null): string => (secs === null ? '-' : new Date(secs * 1000).toISOString().replace('.000Z', 'Z'));

/** A command line as a shell would take it back: plain words as they are, others single-quoted. */
function shellWords(words: readonly string[]): string {
  return words.map((w) => (/^[A-Za-z0-9_./=:@%+,-]+$/.test(w) ? w : `'${w.replaceAll("'", "'\\''")}'`)).join(' ');
}

/** GET /jobs as a table for people: id and host prefixes, amounts in credits. */
export function formatJobList(jobs: readonly JobSummary[]): string {
  const head = ['JOB', 'ROLE', 'STATUS', 'BID', 'COST', 'HOST'];
  return columns([head, ...jobs.map((j) => [short(j.job_id), j.role, j.status, inCredits(j.bid), inCredits(j.cost), short(j.host)])]);
}

/** GET /jobs/:id as lines for people: amounts in credits, times in UTC, one refusal a line. */
export function formatJob(job: JobView): string {
  const rows: [string, string][] = [
    ['job id', job.job_id],
    ['status', job.status],
    ['role', job.role],
    ['image', job.image],
    ['command', job.cmd === null ? "(the image's own)" : shellWords(job.cmd)],
    ['resources', `${job.cpu_cores} cpu, ${job.mem_mb} MiB, ${job.gpus} gpu, up to ${job.duration_secs} s`],
    ['billing', job.billing],
    ['bid', `${inCredits(job.bid)} credits`],
    ['cost', job.cost === null ? '- (not settled)' : `${inCredits(job.cost)} credits`],
    ['payer', job.payer],
    ['host', job.host ?? '- (none yet)'],
    ['container', job.container_id ?? '-'],
    ['created', time(job.created_at)],
    ['started', time(job.started_at)],
    ['finished', time(job.finished_at)],
    ['exit code', job.exit_code === null ? '-' : String(job.exit_code)],
  ];
  if (job.heartbeats !== null) rows.push(['heartbeats', `${job.heartbeats.count}, paid ${inCredits(job.heartbeats.paid)} credits`]);
  const lines = rows.map(([name, value]) => `${name.padEnd(12)}${value}\n`);
  return lines.join('') + formatRefusals(job.refusals);
}

/** Every host's latest reason for not taking the job, one a line, whole; nothing when none refused. */
export function formatRefusals(refusals: readonly Refusal[]): string {
  if (refusals.length === 0) return '';
  const lines = [`refused by ${refusals.length} host${refusals.length === 1 ? '' : 's'}:\n`];
  for (const r of refusals) lines.push(`  ${short(r.host)}  ${time(r.at)}  ${r.reason}\n`);
  return lines.join('');
}

/** Where a job that has not ended is, in words, or null once it has ended. */
function waitingState(job: JobView): string | null {
  if (job.status === 'pending') return job.host === null ? 'waiting for a host' : `placed with ${short(job.host)}, starting`;
  if (job.status === 'running') return `running on ${short(job.host)}`;
  if (job.status === 'awaiting_settlement') return 'ended, awaiting its settlement';
  return null;
}

/**
 * What `run --follow` says about a job as it changes, to stderr: where it is, and each host's
 * latest reason for not taking it as it comes (cut to fit 100 columns; `mesh jobs show` gives them whole).
 */
export class JobWatch {
  #state: string | null = null;
  readonly #reasons = new Map<string, string>();

  /** The lines `job` adds to what was said before. */
  changes(job: JobView): string {
    let out = '';
    const state = waitingState(job);
    if (state !== null && state !== this.#state) out += `${state}\n`;
    this.#state = state;
    for (const r of job.refusals) {
      if (this.#reasons.get(r.host) === r.reason) continue;
      this.#reasons.set(r.host, r.reason);
      out += `${fit(`  ${short(r.host)}: ${r.reason}`, TABLE_WIDTH)}\n`;
    }
    return out;
  }
}

/** The job's end in one line: `settled, exit code 0, cost 0.75 of 1.5 credits`. */
export function formatOutcome(job: JobView): string {
  const exit = job.exit_code === null ? '' : `, exit code ${job.exit_code}`;
  const cost = job.cost === null ? '' : `, cost ${inCredits(job.cost)} of ${inCredits(job.bid)} credits`;
  return `job ${short(job.job_id)} ${job.status}${exit}${cost}\n`;
}

// ---------------------------------------------------------------------------------------------
// Talking to the node

const JOBS = { none: 'no job', plural: 'jobs' };

const jobIds = async (client: NodeClient): Promise<string[]> => (await client.get<JobSummary[]>('/jobs')).map((j) => j.job_id);

/** The full id of the one job of this node whose id starts with `ref`; NodeClientError when none or several do. */
export async function jobIdOf(client: NodeClient, ref: string, kind: IdKind = JOBS): Promise<string> {
  return ref.length === 64 ? ref : uniqueId(await jobIds(client), ref, kind);
}

function printLine(io: Io, line: LogEvent): void {
  (line.stream === 'stderr' ? io.err : io.out)(`${line.text}\n`);
}

/**
 * Prints the job's output as it comes until the node says it is complete, or `signal` aborts.
 * A stream closed without its end frame (the node cut a slow reader) is followed again after the
 * last line seen.
 */
async function followLogs(client: NodeClient, jobId: string, io: Io, signal: AbortSignal): Promise<void> {
  await client.follow(
    `/jobs/${jobId}/logs?follow=1`,
    (event) => {
      if (event.event === 'end') return false;
      printLine(io, JSON.parse(event.data) as LogEvent);
      return true;
    },
    { signal, lastEventId: '0' },
  );
}

/**
 * Follows the job's output and its status until it reaches its end; resolves to the job then. While
 * it waits, stderr says where it is and why hosts do not take it, as that changes.
 */
async function awaitEnd(client: NodeClient, jobId: string, io: Io): Promise<JobView> {
  const stop = new AbortController();
  const watch = new JobWatch();
  // The output is a view of the job, not the job: a stream that fails is said, and the wait goes on.
  const logs = followLogs(client, jobId, io, stop.signal).catch((error: Error) => io.err(`the job's output could not be followed: ${error.message}\n`));
  try {
    let job = await client.get<JobView>(`/jobs/${jobId}`);
    while (!isFinal(job.status)) {
      const said = watch.changes(job);
      if (said !== '') io.err(said);
      await sleep(POLL_MS);
      job = await client.get<JobView>(`/jobs/${jobId}`);
    }
    for (const until = Date.now() + COST_WAIT_MS; awaitsCost(job) && Date.now() < until; ) {
      await sleep(POLL_MS);
      job = await client.get<JobView>(`/jobs/${jobId}`);
    }
    // The last lines may still be on their way.
    await Promise.race([logs, sleep(OUTPUT_GRACE_MS)]);
    stop.abort();
    await logs;
    return job;
  } finally {
    stop.abort();
  }
}

// ---------------------------------------------------------------------------------------------
// Commands

/** A job's resources and price, as `mesh jobs run` and `mesh deploy` take them. */
export const jobSizeOptions = {
  cpu: option({ value: 'N', description: `CPU cores (${JOB_LIMITS.cpuCores.join(' to ')})`, parse: range(JOB_LIMITS.cpuCores), required: true }),
  mem: option({ value: 'MB', description: `memory in MiB (${JOB_LIMITS.memMb.join(' to ')})`, parse: range(JOB_LIMITS.memMb), required: true }),
  duration: option({
    value: 'S',
    description: `the most seconds it may run (${JOB_LIMITS.durationSecs.join(' to ')})`,
    parse: range(JOB_LIMITS.durationSecs),
    required: true,
  }),
  bid: option({ value: 'CREDITS', description: 'the most it may cost, in credits as a decimal (locked until it ends)', parse: credits, required: true }),
};

const runCommand = command({
  description:
    "Bids for a container job and prints its id. With --follow, streams its output (the job's stdout to stdout, its stderr to stderr) and waits until it is settled, failed or expired.",
  options: {
    ...clientOptions,
    ...jobSizeOptions,
    env: list({ value: 'K=V', description: 'an environment variable of the container', parse: envPair }),
    gpus: option({ value: 'N', description: 'GPUs', parse: range(JOB_LIMITS.gpus), default: 0 }),
    heartbeat: flag('pay by heartbeats every 30 s while it runs instead of one settlement at the end'),
    follow: flag('stream its output and wait for its end; exit 0 only when it settled with exit code 0', 'f'),
    json,
  },
  positionals: { image: positional('image', 'the container image: [registry[:port]/]name[:tag][@sha256:…]') },
  rest: { name: 'cmd', description: "the command to run in it, after the options (default: the image's own)" },
  run: async ({ options, args, rest }, io) => {
    const client = await NodeClient.find(options);
    const body = {
      image: args.image,
      ...(rest.length > 0 && { cmd: rest }),
      ...(options.env.length > 0 && { env: options.env }),
      cpu_cores: options.cpu,
      mem_mb: options.mem,
      duration_secs: options.duration,
      bid: formatAmount(options.bid),
      ...(options.heartbeat && { billing: 'heartbeat' }),
      ...(options.gpus > 0 && { gpus: options.gpus }),
    };
    const answer = await client.post<{ job_id: string }>('/jobs/bid', body);
    if (!options.follow) {
      io.out(options.json ? `${JSON.stringify(answer)}\n` : `${answer.job_id}\n`);
      return EXIT.done;
    }
    // Stdout is the job's own: what the command says goes to stderr.
    io.err(`job ${answer.job_id}, bid ${formatCredits(options.bid)} credits\n`);
    const job = await awaitEnd(client, answer.job_id, io);
    if (options.json) io.out(`${JSON.stringify(job, null, 2)}\n`);
    // A job that never ran ends with every host's reason, whole.
    else if (job.started_at === null) io.err(formatRefusals(job.refusals));
    io.err(formatOutcome(job));
    return job.status === 'settled' && job.exit_code === 0 ? EXIT.done : EXIT.failed;
  },
});

const lsCommand = command({
  description: 'Lists the jobs this node paid for or hosts, newest first: id and host prefixes, amounts in credits.',
  options: { ...clientOptions, json },
  run: async ({ options }, io) => {
    const jobs = await (await NodeClient.find(options)).get<JobSummary[]>('/jobs');
    if (options.json) io.out(`${JSON.stringify(jobs, null, 2)}\n`);
    else if (jobs.length === 0) io.err('no jobs\n');
    else io.out(formatJobList(jobs));
    return EXIT.done;
  },
});

const jobArg = { job: positional('job', 'the job id, or its first characters as mesh jobs ls shows them', jobRef) };

const showCommand = command({
  description: 'Shows one job: its status, spec, amounts in credits, times and why hosts refused it.',
  options: { ...clientOptions, json },
  positionals: jobArg,
  run: async ({ options, args }, io) => {
    const client = await NodeClient.find(options);
    const job = await client.get<JobView>(`/jobs/${await jobIdOf(client, args.job)}`);
    io.out(options.json ? `${JSON.stringify(job, null, 2)}\n` : formatJob(job));
    return EXIT.done;
  },
});

const logsCommand = command({
  description: "Prints a job's output: its stdout to stdout, its stderr to stderr. With -f, follows it until the job's output is complete.",
  options: { ...clientOptions, follow: flag('follow the output as it comes, until it is complete', 'f') },
  positionals: jobArg,
  run: async ({ options, args }, io) => {
    const client = await NodeClient.find(options);
    const jobId = await jobIdOf(client, args.job);
    if (options.follow) {
      await followLogs(client, jobId, io, new AbortController().signal);
      return EXIT.done;
    }
    const { lines } = await client.get<{ lines: LogEvent[]; ended: boolean }>(`/jobs/${jobId}/logs`);
    for (const line of lines) printLine(io, line);
    return EXIT.done;
  },
});

const stopCommand = command({
  description:
    'Stops a job at once (DELETE /jobs/:id): on its host, its container; on its payer, asks the host. A job that had not started gives its bid back within 10 blocks.',
  options: clientOptions,
  positionals: { job: positional('job', 'the job id or its first characters, a container id or a container name (mesh-job-…)', stopRef) },
  run: async ({ options, args }, io) => {
    const client = await NodeClient.find(options);
    // The start of a job id names that job (several: which one?); anything else goes to the node as it is (a container).
    const ids = /^[0-9a-f]{1,63}$/.test(args.job) ? await jobIds(client) : [];
    const ref = ids.some((id) => id.startsWith(args.job)) ? uniqueId(ids, args.job, JOBS) : args.job;
    const job = ids.includes(ref) ? await client.get<JobView>(`/jobs/${ref}`) : null;
    await client.delete(`/jobs/${ref}`);
    io.err(`stopped ${ref}\n`);
    // Nothing ran: no host keeps the bid (docs/jobs.md "Accepted before it runs").
    if (job?.role === 'payer' && job.status === 'pending' && job.started_at === null) {
      const when = job.host === null ? 'within 10 blocks of the bid' : 'once its host, which had not started it, settles it at 0';
      io.err(`its bid of ${inCredits(job.bid)} credits is back in the free balance ${when} (mesh status shows it)\n`);
    }
    return EXIT.done;
  },
});

const expireCommand = command({
  description:
    "Takes back the credits locked by a job's bid (JobExpire): 10 blocks after the bid while no host accepted it (the node does this by itself for a job that ended unaccepted), else 1,440 blocks after the acceptance; prints its transaction id.",
  options: clientOptions,
  positionals: jobArg,
  run: async ({ options, args }, io) => {
    const client = await NodeClient.find(options);
    const { tx_id: txId } = await client.post<{ tx_id: string }>(`/jobs/${await jobIdOf(client, args.job)}/expire`, {});
    io.out(`${txId}\n`);
    return EXIT.done;
  },
});

export const jobsCommand = command({
  description: 'Container jobs on the mesh: bid for one, follow it, list, show, stop and expire them.',
  commands: [
    entry('run', 'bid for a job; with --follow, stream its output and wait for its end', () => runCommand),
    entry('ls', 'list the jobs this node paid for or hosts', () => lsCommand),
    entry('show', 'show one job', () => showCommand),
    entry('logs', "print a job's output (-f: follow it)", () => logsCommand),
    entry('stop', 'stop a job at once', () => stopCommand),
    entry('expire', "take back an old, unsettled bid's credits", () => expireCommand),
  ],
});
