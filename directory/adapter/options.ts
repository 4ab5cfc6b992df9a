/**
 * The command-line options of the directory server, shared by the Node command
 * (`mesh directory`) and the Deno entry (`deno task directory`), so both take the same flags.
 */
import { type FlagOption, flag, type Options, type OptionValues, option, type ValueOption } from '../../host-node/cli/command.ts';
import { decimal, integer, port } from '../../host-node/cli/values.ts';

export interface ServeOptions {
  readonly host: string;
  /** 0 picks a free port. */
  readonly port: number;
  /** Dataset file; undefined: `~/.mesh/directory/directory.json`, where `mesh directory import` writes (dataset-path.ts). */
  readonly data: string | undefined;
  /** Submissions folder (Node) or KV file (Deno); undefined: the runtime's default. */
  readonly submissions: string | undefined;
  /** Requests per second per client; 0 turns the limit off. */
  readonly rateLimit: number;
  readonly burst: number;
  /** Rate-limit by X-Forwarded-For's last address (behind a reverse proxy); off by default. */
  readonly trustProxy: boolean;
}

export const DEFAULT_HOST = '127.0.0.1';
export const DEFAULT_PORT = 8080;

export const SERVE_DESCRIPTION = `Serves the manufacturer directory: the JSON API under /api/v1, the export /directory.json,
/openapi.json, the MCP endpoint /mcp and the submission form /submit.`;

export const SERVE_NOTES = 'The first line printed is "directory listening on http://HOST:PORT".';

/** The server's option definitions. */
export interface ServeOptionDefinitions extends Options {
  readonly host: ValueOption<string>;
  readonly port: ValueOption<number>;
  readonly data: ValueOption<string | undefined>;
  readonly submissions: ValueOption<string | undefined>;
  readonly 'rate-limit': ValueOption<number>;
  readonly burst: ValueOption<number>;
  readonly 'trust-proxy': FlagOption;
}

/** The options, with `submissionsDefault` saying where submissions go on this runtime. */
export function serveOptions(submissionsDefault: string): ServeOptionDefinitions {
  return {
    host: option({ value: 'ADDR', description: 'address to listen on', default: DEFAULT_HOST }),
    port: option({ value: 'N', description: 'port, 0 for a free one', parse: port(), default: DEFAULT_PORT }),
    data: option({ value: 'FILE', description: 'dataset file', shown: '~/.mesh/directory/directory.json, written by mesh directory import' }),
    submissions: option({ value: 'PATH', description: 'where submissions are kept for review', shown: submissionsDefault }),
    'rate-limit': option({
      value: 'N',
      description: 'requests per second per client, after the burst; 0 for no limit',
      parse: decimal(0, 1_000_000),
      default: 20,
    }),
    burst: option({ value: 'N', description: 'requests a client may make at once', parse: integer(1, 1_000_000), default: 120 }),
    'trust-proxy': flag(
      'behind exactly one reverse proxy that appends the client address to X-Forwarded-For: rate-limit by that last address (without this flag the header is ignored: any client can send it)',
    ),
  };
}

/** The server's settings from the parsed options. */
export function serveConfig(values: OptionValues<ServeOptionDefinitions>): ServeOptions {
  return {
    host: values.host,
    port: values.port,
    data: values.data,
    submissions: values.submissions,
    rateLimit: values['rate-limit'],
    burst: values.burst,
    trustProxy: values['trust-proxy'],
  };
}

/** `http://HOST:PORT`, with brackets around an IPv6 address. */
export function origin(host: string, port: number): string {
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}
