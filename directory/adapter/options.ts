/**
 * The command-line options of the directory server, shared by the Node command
 * (`mesh directory`) and the Deno entry (`deno task directory`), so both take the same flags.
 */

export interface ServeOptions {
  readonly host: string;
  /** 0 picks a free port. */
  readonly port: number;
  /** Dataset file; undefined: the default dataset, built once from the EPA FRS extract (import/default-dataset.ts). */
  readonly data: string | undefined;
  /** Submissions folder (Node) or KV file (Deno); undefined: the runtime's default. */
  readonly submissions: string | undefined;
  /** Requests per second per client; 0 turns the limit off. */
  readonly rateLimit: number;
  readonly burst: number;
  readonly help: boolean;
}

export const DEFAULT_HOST = '127.0.0.1';
export const DEFAULT_PORT = 8080;

/** The options text, with `submissionsDefault` saying where submissions go on this runtime. */
export function serveUsage(command: string, submissionsDefault: string): string {
  return `Usage: ${command} [options]

Serves the manufacturer directory: the JSON API under /api/v1, the export /directory.json,
/openapi.json, the MCP endpoint /mcp and the submission form /submit.

Options:
  --host ADDR          address to listen on (default ${DEFAULT_HOST})
  --port N             port (default ${DEFAULT_PORT}; 0 picks a free one)
  --data FILE          dataset file (default ~/.mesh/directory/directory.json, built on first
                       start from the US EPA FRS extract; mesh directory import builds others)
  --submissions PATH   where submissions are kept for review (default ${submissionsDefault})
  --rate-limit N       requests per second per client, after the burst (default 20; 0 = no limit)
  --burst N            requests a client may make at once (default 120)

The first line printed is "directory listening on http://HOST:PORT".
`;
}

function number(flag: string, value: string | undefined, integer: boolean, min: number, max: number): number {
  const n = value !== undefined && /^[0-9]+(\.[0-9]+)?$/.test(value) ? Number(value) : NaN;
  if (!(n >= min && n <= max) || (integer && !Number.isInteger(n))) {
    throw new RangeError(`${flag} takes ${integer ? 'an integer' : 'a number'} from ${min} to ${max}, got ${JSON.stringify(value)}`);
  }
  return n;
}

/** Parses the options; throws a RangeError with a message for the user. */
export function parseServeArgs(args: readonly string[]): ServeOptions {
  let host = DEFAULT_HOST;
  let port = DEFAULT_PORT;
  let data: string | undefined;
  let submissions: string | undefined;
  let rateLimit = 20;
  let burst = 120;
  let help = false;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const eq = arg.indexOf('=');
    const flag = arg.startsWith('--') && eq > 0 ? arg.slice(0, eq) : arg;
    const value = (): string => {
      const v = eq > 0 && arg.startsWith('--') ? arg.slice(eq + 1) : args[++i];
      if (v === undefined || v === '') throw new RangeError(`${flag} needs a value`);
      return v;
    };
    switch (flag) {
      case '--help':
      case '-h':
        help = true;
        break;
      case '--host':
        host = value();
        break;
      case '--port':
        port = number(flag, value(), true, 0, 65535);
        break;
      case '--data':
        data = value();
        break;
      case '--submissions':
        submissions = value();
        break;
      case '--rate-limit':
        rateLimit = number(flag, value(), false, 0, 1_000_000);
        break;
      case '--burst':
        burst = number(flag, value(), true, 1, 1_000_000);
        break;
      default:
        throw new RangeError(arg.startsWith('-') ? `unknown option ${flag}` : `unexpected argument ${JSON.stringify(arg)}`);
    }
  }
  return { host, port, data, submissions, rateLimit, burst, help };
}

/** `http://HOST:PORT`, with brackets around an IPv6 address. */
export function origin(host: string, port: number): string {
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}
