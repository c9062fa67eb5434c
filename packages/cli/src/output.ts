/**
 * What the CLI writes: tables for people (cli-table3), JSON for programs (`-o json`). Colours only
 * when the stream is a terminal and NO_COLOR is unset; progress bars only on a terminal.
 */
import Table from "cli-table3";
import pc from "picocolors";

export type Colors = ReturnType<typeof pc.createColors>;

export interface Io {
  out(text: string): void;
  err(text: string): void;
  stdoutIsTTY: boolean;
  stderrIsTTY: boolean;
  /** Standard input as text (login, `--data-file -`). */
  readStdin(): Promise<string>;
  /** Aborted on Ctrl-C / SIGTERM: long-running commands (tail, listen) stop and exit 0. */
  signal: AbortSignal;
}

export type Format = "table" | "json";

export const colorsFor = (isTTY: boolean, env: Record<string, string | undefined>): Colors =>
  pc.createColors(Boolean(env.FORCE_COLOR) || (isTTY && !env.NO_COLOR && env.TERM !== "dumb"));

export function table(
  head: string[],
  rows: (string | number | null | undefined)[][],
  colors: Colors,
): string {
  const t = new Table({
    head: head.map((h) => colors.bold(h)),
    style: { head: [], border: [], compact: true },
    chars: { mid: "", "left-mid": "", "mid-mid": "", "right-mid": "" },
  });
  for (const row of rows) t.push(row.map((c) => (c === null || c === undefined ? "" : String(c))));
  return t.toString();
}

/** One object as two columns, field and value; objects and arrays as JSON. */
export function record(fields: Record<string, unknown>, colors: Colors): string {
  const t = new Table({ style: { head: [], border: [], compact: true } });
  for (const [k, v] of Object.entries(fields))
    t.push({
      [colors.bold(k)]:
        v === null || v === undefined ? "" : typeof v === "object" ? JSON.stringify(v, null, 2) : String(v),
    });
  return t.toString();
}

export const json = (value: unknown) => JSON.stringify(value, null, 2);
