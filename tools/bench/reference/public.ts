/**
 * The public surface's reference: express answering, from memory, the very bytes the public surface answered
 * for the same paths (status, headers, body), recorded by the runner before the rounds. The least any public
 * surface must do per scan: parse the request, find the answer, write it.
 *
 *   REF_PUBLIC_PORT=port REF_PUBLIC_ANSWERS=answers.json node --import tsx tools/bench/reference/public.ts
 */
import fs from "node:fs";
import express from "express";

interface Recorded {
  status: number;
  headers: Record<string, string>;
  /** base64 */
  body: string;
}

const recorded = JSON.parse(fs.readFileSync(process.env.REF_PUBLIC_ANSWERS!, "utf8")) as Record<
  string,
  Recorded
>;
const answers = new Map(
  Object.entries(recorded).map(([path, r]) => [path, { ...r, bytes: Buffer.from(r.body, "base64") }]),
);

const app = express();
app.disable("x-powered-by");
app.disable("etag");
app.get("/readyz", (_req, res) => {
  res.status(200).send("ok");
});
app.use((req, res) => {
  const a = answers.get(req.originalUrl);
  if (!a) {
    res.status(404).end();
    return;
  }
  res.writeHead(a.status, { ...a.headers, "content-length": String(a.bytes.length) });
  res.end(a.bytes);
});
app.listen(Number(process.env.REF_PUBLIC_PORT), "127.0.0.1");
