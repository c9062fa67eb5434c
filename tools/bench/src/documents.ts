/**
 * The document upload case: the time from POST .../passports/{id}/documents (form B) to the document being
 * `ready`, for a 1 MB file on the filesystem store, measured as an integrator sees it: the create, the PUT of the
 * bytes to the signed URL, and the GET that answers ready. One upload at a time; printed, never asserted.
 */
import { percentile } from "./stats";

export interface UploadFigures {
  n: number;
  bytes: number;
  totalMs: number[];
  createMs: number[];
  putMs: number[];
  readMs: number[];
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

export async function benchDocumentUpload(
  target: { baseUrl: string; organization: string; key: string },
  passportId: string,
  n: number,
  bytes = 1024 * 1024,
): Promise<UploadFigures> {
  const file = Buffer.alloc(bytes, 7);
  PNG_SIGNATURE.copy(file);
  const auth = { authorization: `Bearer ${target.key}` };
  const out: UploadFigures = { n, bytes, totalMs: [], createMs: [], putMs: [], readMs: [] };
  const ms = (t0: bigint) => Number(process.hrtime.bigint() - t0) / 1e6;
  for (let i = 0; i < n; i++) {
    const t0 = process.hrtime.bigint();
    const created = await fetch(
      `${target.baseUrl}/organizations/${target.organization}/passports/${passportId}/documents`,
      {
        method: "POST",
        headers: { ...auth, "content-type": "application/json" },
        body: JSON.stringify({
          type: "image",
          access_tier: "public",
          file_name: `bench-${i}.png`,
          mime_type: "image/png",
          file_size: bytes,
        }),
      },
    );
    const doc = (await created.json()) as {
      id: string;
      upload: { url: string; headers: Record<string, string> };
    };
    if (created.status !== 201)
      throw new Error(`upload create answered ${created.status}: ${JSON.stringify(doc)}`);
    const t1 = process.hrtime.bigint();
    const put = await fetch(doc.upload.url, { method: "PUT", headers: doc.upload.headers, body: file });
    await put.arrayBuffer();
    if (put.status !== 200) throw new Error(`upload PUT answered ${put.status}`);
    const t2 = process.hrtime.bigint();
    let state = "pending";
    while (state !== "ready") {
      const got = await fetch(`${target.baseUrl}/organizations/${target.organization}/documents/${doc.id}`, {
        headers: auth,
      });
      state = ((await got.json()) as { upload_state: string }).upload_state;
    }
    out.createMs.push(Number(t1 - t0) / 1e6);
    out.putMs.push(Number(t2 - t1) / 1e6);
    out.readMs.push(ms(t2));
    out.totalMs.push(ms(t0));
  }
  return out;
}

export function uploadTable(f: UploadFigures): string[] {
  const fmt = (v: number) => v.toFixed(1);
  const row = (name: string, xs: number[]) =>
    `${name.padEnd(22)}${fmt(percentile(xs, 50)).padStart(9)}${fmt(Math.min(...xs)).padStart(9)}${fmt(Math.max(...xs)).padStart(9)}`;
  return [
    `document upload, POST .../documents to ready, ${(f.bytes / 1024 / 1024).toFixed(0)} MB file, filesystem store, ${f.n} uploads one at a time (ms)`,
    `${"".padEnd(22)}${"p50".padStart(9)}${"min".padStart(9)}${"max".padStart(9)}`,
    row("create (POST)", f.createMs),
    row("PUT to signed URL", f.putMs),
    row("GET until ready", f.readMs),
    row("total", f.totalMs),
  ];
}
