/**
 * The command definitions of the `mesh` CLI: typed options and positionals, the help text made from
 * them, and the fixed exit codes. A definition names no runtime API (no `node:*`, no `process`), so
 * the directory's Deno entry shares its option definitions with `mesh directory`; `run.ts` parses
 * a command line against a definition with `node:util`'s parseArgs, which Deno also has.
 *
 * @example
 * const hello = command({
 *   options: { name: option({ value: 'NAME', description: 'whom to greet', default: 'world' }) },
 *   run: ({ options }, io) => (io.out(`hello ${options.name}\n`), EXIT.done),
 * });
 */

/** The exit codes of every command: done, failed (said in one line), usage (bad option or value). */
export const EXIT = { done: 0, failed: 1, usage: 2 } as const;

/** A command line the command cannot take: exit 2, with the problem and the usage on stderr. */
export class UsageError extends RangeError {
  override readonly name = 'UsageError';
}

/** Turns an option's or argument's text into its value; throws UsageError naming `name`. */
export type Parser<T> = (text: string, name: string) => T;

export interface FlagOption {
  readonly kind: 'flag';
  readonly description: string;
  readonly short?: string;
}

export interface ValueOption<T> {
  readonly kind: 'value';
  /** The value's placeholder in the help text: `--port N`. */
  readonly value: string;
  readonly description: string;
  readonly parse: Parser<T>;
  readonly fallback: T;
  /** How the help text states the default, when there is one. */
  readonly shown: string | undefined;
  readonly required: boolean;
  readonly short?: string;
}

export interface ListOption<T> {
  readonly kind: 'list';
  readonly value: string;
  readonly description: string;
  readonly parse: Parser<T>;
  readonly short?: string;
}

export type AnyOption = FlagOption | ValueOption<unknown> | ListOption<unknown>;
export type Options = Readonly<Record<string, AnyOption>>;

export interface Positional<T> {
  /** The placeholder in the help text: `<node-id>`. */
  readonly name: string;
  readonly description: string;
  readonly parse: Parser<T>;
}

export type Positionals = Readonly<Record<string, Positional<unknown>>>;

type OptionValue<O> = O extends FlagOption ? boolean : O extends ListOption<infer T> ? T[] : O extends ValueOption<infer T> ? T : never;

/** The parsed values of `O`: a boolean per flag, an array per repeatable option, else the parsed value. */
export type OptionValues<O extends Options> = { -readonly [K in keyof O]: OptionValue<O[K]> };
export type PositionalValues<P extends Positionals> = { -readonly [K in keyof P]: P[K] extends Positional<infer T> ? T : never };

/** What a command's `run` receives. */
export interface Input<O extends Options, P extends Positionals> {
  readonly options: OptionValues<O>;
  readonly args: PositionalValues<P>;
  /** The options as given, in order (for commands where the order of different options matters). */
  readonly given: readonly { readonly name: string; readonly text: string | undefined }[];
  /** The command's words, `mesh directory import`: the prefix of its messages. */
  readonly path: string;
  /** The words after the command's path, as given. */
  readonly argv: readonly string[];
  /** The words after `--`, for a command that takes them (`rest`); empty otherwise. */
  readonly rest: readonly string[];
}

/** Words after `--` that a command takes as they are (a container's command line), named in its help. */
export interface Rest {
  /** The placeholder in the help text: `[-- <cmd>...]`. */
  readonly name: string;
  readonly description: string;
}

/** Where a command writes: standard output and standard error. */
export interface Io {
  out(text: string): void;
  err(text: string): void;
  /** Standard input, for the commands that read it (a payload of `-`). */
  readonly input?: NodeJS.ReadableStream;
}

/**
 * A command. With `run`, it takes `options` and `positionals`; with `commands`, its first argument
 * may name a subcommand instead; with both, a first argument that names no subcommand goes to `run`.
 */
export interface Command<O extends Options = Options, P extends Positionals = Positionals> {
  /** Text under the usage line. */
  readonly description?: string;
  readonly options: O;
  readonly positionals: P;
  /** Words after `--`, when the command takes any. */
  readonly rest?: Rest;
  /** Text after the options. */
  readonly notes?: string;
  readonly commands: readonly Entry[];
  run?(input: Input<O, P>, io: Io): Promise<number> | number;
}

/** A subcommand as its parent lists it; `load` imports its module only when it runs. */
export interface Entry {
  readonly name: string;
  /** One line for the parent's help. */
  readonly summary: string;
  readonly load: () => Command | Promise<Command>;
}

/** Defines a command; see {@link Command}. */
export function command<O extends Options = Record<never, never>, P extends Positionals = Record<never, never>>(spec: {
  description?: string;
  options?: O;
  positionals?: P;
  rest?: Rest;
  notes?: string;
  commands?: readonly Entry[];
  run?(input: Input<O, P>, io: Io): Promise<number> | number;
}): Command<O, P> {
  return { ...spec, options: spec.options ?? ({} as O), positionals: spec.positionals ?? ({} as P), commands: spec.commands ?? [] };
}

/** A subcommand entry. */
export function entry<O extends Options, P extends Positionals>(name: string, summary: string, load: () => Command<O, P> | Promise<Command<O, P>>): Entry {
  return { name, summary, load: load as () => Command | Promise<Command> };
}

/** A flag: true when given, false when not; it takes no value. */
export function flag(description: string, short?: string): FlagOption {
  return { kind: 'flag', description, ...(short !== undefined && { short }) };
}

const text: Parser<string> = (value) => value;

interface ValueSpec<T> {
  /** Placeholder in the help text (`N`, `DIR`). */
  value: string;
  description: string;
  /** Default: the text itself (never empty: the kit refuses empty values). */
  parse?: Parser<T>;
  /** How the help states the default, when `String(default)` would not say it well (a home directory, a computed value). */
  shown?: string;
  short?: string;
}

/** An option that takes a value: with a `default`, without one (undefined when not given), or `required`. */
// NoInfer: the value's type comes from `parse` (or is a string), never from where the option is put.
export function option<T = string>(spec: ValueSpec<T> & { default: T }): ValueOption<NoInfer<T>>;
export function option<T = string>(spec: ValueSpec<T> & { required: true }): ValueOption<NoInfer<T>>;
export function option<T = string>(spec: ValueSpec<T>): ValueOption<NoInfer<T> | undefined>;
export function option<T>(spec: ValueSpec<T> & { default?: T; required?: true }): ValueOption<T | undefined> {
  const hasDefault = 'default' in spec;
  return {
    kind: 'value',
    value: spec.value,
    description: spec.description,
    parse: spec.parse ?? (text as Parser<T>),
    fallback: spec.default,
    shown: spec.shown ?? (hasDefault ? String(spec.default) : undefined),
    required: spec.required === true,
    ...(spec.short !== undefined && { short: spec.short }),
  };
}

/** An option that may be given several times; its values in the order given (none: empty). */
export function list<T = string>(spec: { value: string; description: string; parse?: Parser<T>; short?: string }): ListOption<NoInfer<T>> {
  return {
    kind: 'list',
    value: spec.value,
    description: spec.description,
    parse: spec.parse ?? (text as Parser<T>),
    ...(spec.short !== undefined && { short: spec.short }),
  };
}

/** A required positional argument. */
export function positional<T = string>(name: string, description: string, parse?: Parser<T>): Positional<NoInfer<T>> {
  return { name, description, parse: parse ?? (text as Parser<T>) };
}

/** `--name` in messages and help. */

const WIDTH = 100;

/** Two columns, the second wrapped at WIDTH under itself. */
function table(rows: readonly (readonly [string, string])[]): string {
  const left = Math.min(Math.max(...rows.map(([l]) => l.length)) + 2, 28);
  return rows
    .map(([l, r]) => {
      const lines: string[] = [];
      let line = '';
      for (const word of r.split(' ')) {
        if (line !== '' && left + 2 + line.length + 1 + word.length > WIDTH) {
          lines.push(line);
          line = word;
        } else line = line === '' ? word : `${line} ${word}`;
      }
      lines.push(line);
      const head = `  ${l}`;
      const first = head.length + 1 > left + 2 ? `${head}\n${' '.repeat(left + 2)}${lines[0]}` : `${head.padEnd(left + 2)}${lines[0]}`;
      return [first, ...lines.slice(1).map((t) => `${' '.repeat(left + 2)}${t}`)].join('\n');
    })
    .join('\n');
}

function optionRow(name: string, o: AnyOption): [string, string] {
  const short = o.short === undefined ? '' : `-${o.short}, `;
  const label = o.kind === 'flag' ? `${short}--${name}` : `${short}--${name} ${o.value}`;
  let description = o.description;
  if (o.kind === 'list') description += ' (repeatable)';
  if (o.kind === 'value' && o.shown !== undefined) description += ` (default ${o.shown})`;
  return [label, description];
}

/** The help text of `cmd`, whose words are `path` (`mesh identity backup`). */
export function usage(path: string, cmd: Command): string {
  const required = Object.entries(cmd.options)
    .filter(([, o]) => o.kind === 'value' && o.required)
    .map(([name, o]) => ` --${name} ${(o as ValueOption<unknown>).value}`)
    .join('');
  const args = Object.values(cmd.positionals)
    .map((p) => ` <${p.name}>`)
    .join('');
  // Everything after `--` is the command's as it is, so it comes last.
  const rest = cmd.rest ? ` [-- <${cmd.rest.name}>...]` : '';
  const lines: string[] = [];
  if (cmd.run) lines.push(`${path}${args}${required} [options]${rest}`);
  if (cmd.commands.length > 0) lines.push(`${path} <command> [options]`);
  const parts = [`Usage: ${lines.join(`\n${' '.repeat('Usage: '.length)}`)}`];
  if (cmd.description) parts.push(cmd.description.trimEnd());
  const argRows = Object.values(cmd.positionals).map((p): [string, string] => [`<${p.name}>`, p.description]);
  if (cmd.rest) argRows.push([`-- <${cmd.rest.name}>...`, cmd.rest.description]);
  if (argRows.length > 0) parts.push(`Arguments:\n${table(argRows)}`);
  if (cmd.run) {
    const rows = Object.entries(cmd.options).map(([name, o]) => optionRow(name, o));
    parts.push(`Options:\n${table([...rows, ['-h, --help', 'show this help']])}`);
  }
  if (cmd.commands.length > 0) {
    parts.push(`Commands:\n${table([...cmd.commands.map((e): [string, string] => [e.name, e.summary]), ['help', 'show this help']])}`);
    parts.push(`${path} <command> --help shows a command's options.`);
  }
  if (cmd.notes) parts.push(cmd.notes.trimEnd());
  return `${parts.join('\n\n')}\n`;
}
