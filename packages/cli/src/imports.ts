/**
 * `dpp import FILE`: a CSV or XLSX file of passports, one per row, sent through the imports
 * capability (POST /organizations/{organization}/imports, 1 to 500 rows per job), then followed until
 * every row has a result. Columns: `category` (or `--category` for every row), `external_id`, and the
 * category's fields (`product_name`, or `data.product_name`). Cells are typed by the category's field
 * schema: numbers for number fields, JSON for arrays and objects, `true`/`false` for booleans; an
 * empty cell is left out.
 */
import fs from "node:fs";
import path from "node:path";
import { parse as parseCsv } from "csv-parse/sync";
import type { Dpp } from "@dpp/client";
import { UsageError } from "./errors";

export type Cell = string | number | boolean | Date | null | undefined;
export interface ImportRow {
  category: string;
  external_id?: string;
  data: Record<string, unknown>;
}

export const MAX_ROWS_PER_JOB = 500;

/** The rows of a file as records keyed by column name (the first row). */
export async function readTable(file: string, sheet?: string): Promise<Record<string, Cell>[]> {
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
    return rows.map((r) => Object.fromEntries(names.map((n, i) => [n, r[i]])));
  }
  if (ext === ".csv" || ext === ".txt") {
    const text = fs.readFileSync(file, "utf8");
    return parseCsv(text, {
      columns: (h: string[]) => h.map((c) => c.trim()),
      skip_empty_lines: true,
      bom: true,
      trim: true,
    }) as Record<string, Cell>[];
  }
  throw new UsageError(`${file}: a .csv or .xlsx file is expected.`);
}

type FieldType = "string" | "number" | "integer" | "boolean" | "array" | "object" | undefined;

function fieldType(schema: Record<string, unknown>, field: string): FieldType {
  const props = schema.properties as Record<string, { type?: unknown }> | undefined;
  const t = props?.[field]?.type;
  const first = Array.isArray(t) ? t.find((x) => x !== "null") : t;
  return typeof first === "string" ? (first as FieldType) : undefined;
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
  records: Record<string, Cell>[],
  defaultCategory: string | undefined,
  schemaOf: (category: string) => Promise<Record<string, unknown>>,
): Promise<ImportRow[]> {
  const rows: ImportRow[] = [];
  for (const [i, record] of records.entries()) {
    const line = `row ${i + 2}`;
    const category = (typeof record.category === "string" && record.category) || defaultCategory;
    if (!category) throw new UsageError(`${line}: no category (add a category column or pass --category).`);
    const schema = await schemaOf(category);
    const row: ImportRow = { category, data: {} };
    for (const [column, value] of Object.entries(record)) {
      if (column === "category" || column === "" || value === undefined || value === null || value === "")
        continue;
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
      p = dpp.categorySchema(category).then((s) => s.json_schema);
      seen.set(category, p);
    }
    return p;
  };
}

export interface ImportJob {
  object: "import_job";
  id: string;
  status: string;
  total_rows: number;
  succeeded_rows: number;
  failed_rows: number;
  pending_rows: number;
  completed_at: string | null;
  rows?: {
    data: ImportRowResult[];
    has_more: boolean;
    next_after_row_index: number | null;
  };
}

export interface ImportRowResult {
  row_index: number;
  external_id: string;
  status: "succeeded" | "failed";
  passport_id: string | null;
  error: { code: string; detail?: string } | null;
}

export const chunks = <T>(items: T[], size: number): T[][] =>
  Array.from({ length: Math.ceil(items.length / size) }, (_, i) => items.slice(i * size, (i + 1) * size));
