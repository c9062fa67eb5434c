/**
 * The admin CLI's `import FILE` (its file parsing, jobs and failed-rows file are @dpp/cli's, shared with
 * `dpp import`): a 2,000-row CSV fixture goes in 4 jobs of 500, with its progress bar on a terminal, and the rows
 * that failed are written to <file>.failed.csv beside it, each with its line in the file and its error.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { runAdmin } from "@dpp/admin";
import { startHarness, type Harness, type Tenant } from "./support/harness";

jest.setTimeout(300_000);

let h: Harness;
let t: Tenant;
let dir: string;

beforeAll(async () => {
  h = await startHarness("imports-cli", { env: { IMPORTS_POLL_MS: "50" } });
  t = await h.tenant("Spreadsheet brand", "pro");
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "dpp-import-"));
});
afterAll(async () => {
  await h?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

it("imports a 2,000-row CSV in 4 jobs with a progress bar on a terminal, and writes the failed rows beside it", async () => {
  const file = path.join(dir, "catalogue.csv");
  fs.copyFileSync(path.join(__dirname, "fixtures", "imports-2000.csv"), file);

  // stderr as a terminal: the progress bar is drawn there (and only there).
  const drawn: string[] = [];
  const tty = Object.getOwnPropertyDescriptor(process.stderr, "isTTY");
  const write = process.stderr.write.bind(process.stderr);
  Object.defineProperty(process.stderr, "isTTY", { value: true, configurable: true });
  process.stderr.write = ((chunk: string | Uint8Array) => {
    drawn.push(String(chunk));
    return true;
  }) as typeof process.stderr.write;
  let summary: any;
  try {
    summary = await runAdmin(
      ["import", file, "--org", t.organizationId, "--key", t.testKey, "--base-url", h.stack.baseUrl],
      "/nonexistent",
    );
  } finally {
    process.stderr.write = write;
    if (tty) Object.defineProperty(process.stderr, "isTTY", tty);
    else delete (process.stderr as { isTTY?: boolean }).isTTY;
  }
  expect(summary).toEqual({
    object: "import_summary",
    file,
    rows: 2000,
    jobs: 4,
    succeeded: 1980,
    failed: 20,
    failed_rows_file: path.join(dir, "catalogue.failed.csv"),
  });
  const bar = drawn.join("");
  expect(bar).toContain("importing [");
  expect(bar).toContain("2000/2000 rows | 4 jobs | 20 failed");

  // Every 100th row names an unknown category: its line in the file (header = line 1) and its error.
  const failed = fs.readFileSync(summary.failed_rows_file, "utf8").trim().split("\n");
  expect(failed[0]).toBe("line,external_id,category,error_code,error_detail,job_id");
  expect(failed).toHaveLength(21);
  const first = failed[1]!.split(",");
  expect(first.slice(0, 4)).toEqual(["101", "CSV-0099", "spaceship", "unknown_category"]);
  expect(failed.slice(1).map((l) => l.split(",")[1])).toEqual(
    Array.from({ length: 20 }, (_, k) => `CSV-${String(k * 100 + 99).padStart(4, "0")}`),
  );

  // The jobs as the API shows them, and a passport made from a row: repeated columns became an array.
  const jobs = await h.request(`/organizations/${t.organizationId}/imports?status=completed`, {
    key: t.testKey,
  });
  expect(jobs.body.data.map((j: any) => j.total_rows)).toEqual([500, 500, 500, 500]);
  // The jobs were queued side by side: the one whose row 0 is the file's first row.
  const firsts = await Promise.all(
    jobs.body.data.map(
      async (j: any) =>
        (
          await h.request(`/organizations/${t.organizationId}/imports/${j.id}?row_limit=1`, {
            key: t.testKey,
          })
        ).body.rows.data[0],
    ),
  );
  const row0 = firsts.find((r: any) => r.external_id === "CSV-0000");
  expect(row0).toMatchObject({ row_index: 0, status: "succeeded" });
  const shirt0 = { id: row0.passport_id };
  const got = await h.request(`/organizations/${t.organizationId}/passports/${shirt0.id}`, {
    key: t.testKey,
  });
  expect(got.body.data).toMatchObject({
    product_name: "Shirt 0",
    material_composition: [{ fiber: "cotton", percentage: 100 }],
    substances_of_concern: ["Lead", "Nickel"],
    recycled_content_percentage: 0,
  });
});
