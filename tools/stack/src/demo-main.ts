/**
 * The demo credentials step of `npm start`, run once per start as its own short-lived process
 * (the orchestrator, which lives as long as the stack, never loads the gateway's code):
 *
 *   DATABASE_URL=… node .dpp/build/stack-demo/<hash>/main.js <credentials file> <base url>
 *
 * Writes the credentials file (demo.ts) and exits 0; any failure is printed on stderr, exit 1.
 */
import { ensureDemoCredentials } from "./demo";

async function main() {
  const [file, baseUrl] = process.argv.slice(2);
  const databaseUrl = process.env.DATABASE_URL;
  if (!file || !baseUrl || !databaseUrl) {
    console.error("usage: DATABASE_URL=<url> stack-demo <credentials file> <base url>");
    process.exit(2);
  }
  await ensureDemoCredentials(databaseUrl, file, baseUrl);
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
