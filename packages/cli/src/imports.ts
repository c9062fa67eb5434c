/**
 * Importing a spreadsheet: the one place that reads a CSV or XLSX file of passports, maps its columns to import
 * rows, sends them with the SDK's `importRows` (jobs of 500, followed until every row has a result) and writes
 * the failed rows beside the file. Used by `dpp import FILE` (this package) and the admin CLI's `import FILE`.
 *
 * The column mapping (the first row names the columns):
 * - `category`: the row's category id (or `--category` for rows without one);
 * - `external_id`: the row's external_id;
 * - `data.<field>` or `<field>`: a field of the passport's `data`, typed by the category's field schema
 *   (numbers for number fields, `true`/`false` for booleans, JSON for arrays and objects);
 * - a column repeated (`data.certifications` three times): its non-empty cells make an array, each typed as
 *   the field's items;
 * - an empty cell is left out.
 *
 * The failed rows go to `<file name>.failed.csv` beside the file: line (in the file), external_id, category,
 * error code, error detail, job.
 */
import fs from "node:fs";
import path from "node:path";
import { parse as parseCsv } from "csv-parse/sync";
import { stringify as stringifyCsv } from "csv-stringify/sync";
import {
  DppError,
  type Dpp,
  type ImportProgress,
  type ImportRowResult as SdkRowResult,
  type OrganizationClient,
} from "@dpp/client";
import { SingleBar } from "cli-progress";
import { UsageError } from "./errors";

export type Cell = string | number | boolean | Date | null | undefined;
/** A record's value: one cell, or the cells of a repeated column. */
export type Value = Cell | Cell[];
export interface ImportRow {
  category: string;
  external_id?: string;
  data: Record<string, unknown>;
}

export const MAX_ROWS_PER_JOB = 500;

/** The rows of a file as records keyed by column name (the first row). */
export async function readTable(file: string, sheet?: string): Promise<Record<string, Value>[]> {
  const ext = path.extname(file).toLowerCase();
  if (ext === ".xlsx") {
    const { default: readXlsx } = await import("read-excel-file/node");
    const sheets = await readXlsx(file);
    const chosen =
      sheet === undefined ? sheets[0] : (sheets.find((s) => s.sheet === sheet) ?? sheets[Number(sheet) - 1]);
    if (!chosen) throw new UsageError(`${file}: no sheet ${sheet ?? ""}`.trimEnd());
    const [head, ...rows] = chosen.data as Cell[][];
    if (!head) return [];
    const names = head.map((h) => String(h ?? "").trim());
    const repeated = new Set(names.filter((n, i) => names.indexOf(n) !== i));
    return rows
      .filter((r) => r.some((c) => c !== null && c !== undefined && c !== ""))
      .map((r) => {
        const record: Record<string, Value> = {};
        names.forEach((n, i) => {
          if (repeated.has(n)) ((record[n] ??= []) as Cell[]).push(r[i]);
          else record[n] = r[i];
        });
        return record;
      });
  }
  if (ext === ".csv" || ext === ".txt") {
    const text = fs.readFileSync(file, "utf8");
    return parseCsv(text, {
      columns: (h: string[]) => h.map((c) => c.trim()),
      skip_empty_lines: true,
      bom: true,
      trim: true,
      // A repeated column's cells come as an array: the field's array.
      group_columns_by_name: true,
    }) as Record<string, Value>[];
  }
  throw new UsageError(`${file}: a .csv or .xlsx file is expected.`);
}

type FieldType = "string" | "number" | "integer" | "boolean" | "array" | "object" | undefined;

function typeOf(prop: { type?: unknown } | undefined): FieldType {
  const t = prop?.type;
  const first = Array.isArray(t) ? t.find((x) => x !== "null") : t;
  return typeof first === "string" ? (first as FieldType) : undefined;
}

function fieldType(schema: Record<string, unknown>, field: string): FieldType {
  const props = schema.properties as Record<string, { type?: unknown }> | undefined;
  return typeOf(props?.[field]);
}

/** The type of a field's items (an array field), for the cells of a repeated column. */
function itemType(schema: Record<string, unknown>, field: string): FieldType {
  const props = schema.properties as Record<string, { items?: { type?: unknown } }> | undefined;
  return typeOf(props?.[field]?.items);
}

function coerce(value: Cell, type: FieldType, where: string): unknown {
  if (value instanceof Date) return value.toISOString();
  if (typeof value !== "string") return value;
  switch (type) {
    case "number":
    case "integer": {
      const n = Number(value.replace(",", "."));
      if (Number.isNaN(n)) throw new UsageError(`${where}: ${JSON.stringify(value)} is not a number.`);
      return n;
    }
    case "boolean":
      if (/^(true|yes|1)$/i.test(value)) return true;
      if (/^(false|no|0)$/i.test(value)) return false;
      throw new UsageError(`${where}: ${JSON.stringify(value)} is not true or false.`);
    case "array":
    case "object":
      try {
        return JSON.parse(value);
      } catch {
        throw new UsageError(`${where}: ${JSON.stringify(value)} is not JSON.`);
      }
    default:
      return value;
  }
}

/** Import rows from table records, each cell typed by its category's field schema. */
export async function toImportRows(
  records: Record<string, Value>[],
  defaultCategory: string | undefined,
  schemaOf: (category: string) => Promise<Record<string, unknown>>,
): Promise<ImportRow[]> {
  const rows: ImportRow[] = [];
  const rowLines: number[] = [];
  lines.set(rows, rowLines);
  for (const [i, record] of records.entries()) {
    const line = `row ${i + 2}`;
    const category = (typeof record.category === "string" && record.category) || defaultCategory;
    // The record's line in the file (the header is line 1).
    rowLines[rows.length] = i + 2;
    if (!category) throw new UsageError(`${line}: no category (add a category column or pass --category).`);
    const schema = await schemaOf(category);
    const row: ImportRow = { category, data: {} };
    for (const [column, value] of Object.entries(record)) {
      if (column === "category" || column === "" || value === undefined || value === null || value === "")
        continue;
      if (Array.isArray(value)) {
        if (column === "category" || column === "external_id")
          throw new UsageError(`${line}: the column ${column} appears more than once.`);
        const field = column.startsWith("data.") ? column.slice(5) : column;
        const cells = value.filter((c) => c !== undefined && c !== null && c !== "");
        if (cells.length)
          row.data[field] = cells.map((c) => coerce(c, itemType(schema, field), `${line}, ${column}`));
        continue;
      }
      if (column === "external_id") {
        row.external_id = String(value);
        continue;
      }
      const field = column.startsWith("data.") ? column.slice(5) : column;
      row.data[field] = coerce(value, fieldType(schema, field), `${line}, ${column}`);
    }
    rows.push(row);
  }
  return rows;
}

/** Every category's field schema, fetched once. */
export function schemaCache(dpp: Dpp): (category: string) => Promise<Record<string, unknown>> {
  const seen = new Map<string, Promise<Record<string, unknown>>>();
  return (category) => {
    let p = seen.get(category);
    if (!p) {
      // An unknown category is the row's failure (unknown_category), reported by the server with the rest.
      p = dpp.categorySchema(category).then(
        (s) => s.json_schema,
        (err: unknown) => {
          if (err instanceof DppError && err.status === 404) return {};
          throw err;
        },
      );
      seen.set(category, p);
    }
    return p;
  };
}

/** The line in its file of each row toImportRows made (by the rows' array). */
const lines = new WeakMap<ImportRow[], number[]>();

/** A failed row as the failed-rows file lists it. */
export interface FailedRow {
  line: number | null;
  external_id: string | null;
  category: string;
  code: string;
  detail: string;
  job_id: string;
}

export interface ImportSummary {
  rows: number;
  succeeded: number;
  failed: number;
  jobs: number;
  failures: FailedRow[];
  /** The failed-rows CSV written beside the file; null when no row failed. */
  failedFile: string | null;
}

/**
 * Sends the rows with the SDK's importRows (jobs of 500, a few queued ahead, each followed until done) and, when
 * some fail, writes them to `<file>.failed.csv` beside `file`.
 */
export async function importFile(
  org: OrganizationClient,
  file: string,
  rows: ImportRow[],
  o: { onProgress?: (p: ImportProgress) => void; pollMs?: number } = {},
): Promise<ImportSummary> {
  const rowLines = lines.get(rows);
  const failures: FailedRow[] = [];
  const jobs = new Set<string>();
  let succeeded = 0;
  for await (const r of org.imports.importRows(rows, { onProgress: o.onProgress, pollMs: o.pollMs })) {
    jobs.add(r.job_id);
    if (r.status === "succeeded") succeeded++;
    else failures.push(failedRow(r, rowLines?.[r.index] ?? null));
  }
  const failedFile = failures.length ? writeFailedRows(file, failures) : null;
  return { rows: rows.length, succeeded, failed: failures.length, jobs: jobs.size, failures, failedFile };
}

function failedRow(r: SdkRowResult, line: number | null): FailedRow {
  return {
    line,
    external_id: r.external_id,
    category: r.input.category,
    code: r.error?.code ?? "",
    detail: r.error ? detailOf(r.error) : "",
    job_id: r.job_id,
  };
}

/**
 * What to fix in a failed row: each issue of the error with the column (or key) it names, "gtin: A GTIN has 8, 12,
 * 13 or 14 digits and nothing else.", since the error's detail alone says only how many issues there were; the
 * detail when the error lists none.
 */
export function detailOf(error: { detail: string; details?: Record<string, unknown> }): string {
  const issues = Array.isArray(error.details?.issues) ? (error.details.issues as unknown[]) : [];
  const said = issues.flatMap((i) => {
    const { source, message } = (i ?? {}) as { source?: { pointer?: unknown }; message?: unknown };
    if (typeof message !== "string" || !message) return [];
    const pointer = typeof source?.pointer === "string" ? source.pointer : "";
    const where = pointer.replace(/^\/data\//, "").replace(/^\//, "");
    return [where ? `${where}: ${message}` : message];
  });
  return said.length ? said.join("; ") : error.detail;
}

/** The failed-rows file of `file`: `<name>.failed.csv` in the same folder. */
export function failedRowsPath(file: string): string {
  const ext = path.extname(file);
  return path.join(path.dirname(file), `${path.basename(file, ext)}.failed.csv`);
}

export function writeFailedRows(file: string, failures: FailedRow[]): string {
  const out = failedRowsPath(file);
  fs.writeFileSync(
    out,
    stringifyCsv(
      failures.map((f) => [f.line ?? "", f.external_id ?? "", f.category, f.code, f.detail, f.job_id]),
      { header: true, columns: ["line", "external_id", "category", "error_code", "error_detail", "job_id"] },
    ),
  );
  return out;
}

/**
 * A progress bar of an import on `stream` when it is a terminal (nothing otherwise: a log or a pipe gets only
 * the summary): rows with a result of all rows, and how many failed.
 */
export function importProgressBar(
  total: number,
  stream: NodeJS.WritableStream,
  isTTY: boolean,
): { update(p: ImportProgress): void; stop(): void } {
  if (!isTTY) return { update: () => undefined, stop: () => undefined };
  const bar = new SingleBar({
    format: "importing [{bar}] {value}/{total} rows | {jobs} jobs | {failed} failed",
    hideCursor: true,
    stream,
  });
  bar.start(total, 0, { failed: 0, jobs: 0 });
  return {
    update: (p) => bar.update(p.processed, { failed: p.failed, jobs: p.jobs }),
    stop: () => bar.stop(),
  };
}

export const chunks = <T>(items: T[], size: number): T[][] =>
  Array.from({ length: Math.ceil(items.length / size) }, (_, i) => items.slice(i * size, (i + 1) * size));
