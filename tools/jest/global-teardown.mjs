export default async function globalTeardown() {
  const pg = globalThis.__DPP_EMBEDDED_PG__;
  if (pg) await pg.stop();
}
