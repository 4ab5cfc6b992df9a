/**
 * `mesh deploy` and `mesh kill`: directed placement from the command line, over the running node's
 * /mesh-deploy and /mesh-kill (docs/cli.md, docs/placement.md). The node carries the request to the
 * target host, which decides; a grant is a capability token as `mesh cap issue` prints it.
 */
import { readFile } from 'node:fs/promises';
import { formatAmount, formatCredits } from '../../core/encoding/amount.ts';
import { clientOptions, NodeClient } from './client.ts';
import { command, EXIT, flag, option, positional, UsageError } from './command.ts';
import { jobIdOf, jobRef, jobSizeOptions } from './jobs.ts';
import { nodeIdText } from './values.ts';

/** The node answers a deploy once the container runs: two exchanges with the host and its start. */
const DEPLOY_WAIT_MS = 2 * 60_000;

const grantOptions = {
  grant: option({ value: 'TOKEN', description: 'a capability token that lets this node do it on the host (mesh cap issue / delegate)' }),
  'grant-file': option({ value: 'FILE', description: 'read the capability token from FILE' }),
};

/** The grant from --grant or --grant-file, or null (the host then needs admin trust). */
async function grantOf(options: { grant: string | undefined; 'grant-file': string | undefined }): Promise<string | null> {
  if (options.grant !== undefined && options['grant-file'] !== undefined) throw new UsageError('give --grant or --grant-file, not both');
  if (options['grant-file'] !== undefined) return (await readFile(options['grant-file'], 'utf8')).trim();
  return options.grant ?? null;
}

const nodeArg = positional('node-id', 'the host to run on: its node id, 64 lowercase hex', nodeIdText);

export const deployCommand = command({
  description:
    'Runs a container on one chosen host (directed placement), paid by heartbeats up to the bid. The host decides: it runs the job for its admins (mesh trust) and for holders of a capability token rooted in its key. Prints the job id once the container runs; follow it with mesh jobs.',
  options: {
    ...clientOptions,
    ...jobSizeOptions,
    hint: option({ value: 'MULTIADDR', description: 'where to dial the host if it is not connected, possibly through a relay (/…/p2p/<relay>/p2p-circuit)' }),
    ...grantOptions,
    json: flag("print the node's answer as JSON"),
  },
  positionals: { node: nodeArg, image: positional('image', 'the container image: [registry[:port]/]name[:tag][@sha256:…]') },
  rest: { name: 'cmd', description: "the command to run in it, after the options (default: the image's own)" },
  run: async ({ options, args, rest }, io) => {
    const client = await NodeClient.find(options);
    const answer = await client.post<{ job_id: string }>(
      '/mesh-deploy',
      {
        node_id: args.node,
        image: args.image,
        cmd: rest.length > 0 ? rest : null,
        cpu_cores: options.cpu,
        mem_mb: options.mem,
        duration_secs: options.duration,
        bid: formatAmount(options.bid),
        hint_multiaddr: options.hint ?? null,
        grant: await grantOf(options),
      },
      { timeoutMs: DEPLOY_WAIT_MS },
    );
    if (options.json) io.out(`${JSON.stringify(answer)}\n`);
    else {
      io.err(`running on ${args.node.slice(0, 16)}…, up to ${formatCredits(options.bid)} credits\n`);
      io.out(`${answer.job_id}\n`);
    }
    return EXIT.done;
  },
});

export const killCommand = command({
  description:
    "Stops a job on a chosen host (directed placement). The job's payer may always; anyone else needs admin trust on the host or a token that allows kill.",
  options: { ...clientOptions, ...grantOptions },
  positionals: {
    node: nodeArg,
    job: positional('job-id', "the job id, or its first characters as mesh jobs ls shows them (another payer's job: the whole id)", jobRef),
  },
  run: async ({ options, args }, io) => {
    const client = await NodeClient.find(options);
    // Only this node's own jobs are listed here: another payer's job must be named whole.
    const job = await jobIdOf(client, args.job, {
      none: 'no job',
      plural: 'jobs',
      hint: " among this node's (a job another node paid for takes its whole id)",
    });
    await client.post('/mesh-kill', { node_id: args.node, job_id: job, grant: await grantOf(options) });
    io.err(`killed ${job.slice(0, 16)}… on ${args.node.slice(0, 16)}…\n`);
    return EXIT.done;
  },
});
