/**
 * What every benchmark's command takes and records: `--quick`, `--write`, and the command line
 * written beside its results. Each bench's own command (bench/<name>/node.ts) uses these; the
 * `mesh bench` table (bench/cli.ts) lists the commands.
 */
import { flag, type OptionValues } from '../../host-node/cli/command.ts';

/** The options every benchmark takes. */
export const runOptions = {
  quick: flag('few samples, for a smoke run; results are not written unless --write'),
  write: flag('write the results (bench/results/<name>.json and bench/RESULTS.md) after a --quick run'),
};

/** Quick and write from their flags: a full run writes its results, a quick one only when asked. */
export function runFlags(values: OptionValues<typeof runOptions>): { quick: boolean; write: boolean } {
  return { quick: values.quick, write: values.write || !values.quick };
}

/** The command line as the results record it. */
export const commandLine = (input: { path: string; argv: readonly string[] }): string => ['npx', input.path, ...input.argv].join(' ');
