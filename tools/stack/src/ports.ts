import { loadRegistry, portEnvOf, type ServiceName } from "../../registry";

/** Each service's port: its PORT / <NAME>_PORT variable when set, else its registry default. */
export function portsFromEnv(env: NodeJS.ProcessEnv): Record<ServiceName, number> {
  const ports = {} as Record<ServiceName, number>;
  for (const s of loadRegistry()) {
    const variable = portEnvOf(s);
    const text = env[variable];
    const port = text === undefined || text === "" ? s.port : Number(text);
    if (!Number.isInteger(port) || port < 1 || port > 65535)
      throw new Error(`${variable} must be a port number (1 to 65535), got "${text}"`);
    ports[s.name] = port;
  }
  return ports;
}

/** The public surface's HTTP port (public pages, QR codes, the GS1 resolver): PUBLIC_PORT, else 8081. */
export function publicPortFromEnv(env: NodeJS.ProcessEnv): number {
  const text = env.PUBLIC_PORT;
  const port = text === undefined || text === "" ? 8081 : Number(text);
  if (!Number.isInteger(port) || port < 1 || port > 65535)
    throw new Error(`PUBLIC_PORT must be a port number (1 to 65535), got "${text}"`);
  return port;
}

/**
 * Replicas of each service: DPP_REPLICAS for every service (1 when unset), <NAME>_REPLICAS for one
 * (e.g. PASSPORT_REPLICAS=3, GATEWAY_REPLICAS=1), each a whole number from 1 to 16.
 */
export function replicasFromEnv(env: NodeJS.ProcessEnv): Record<ServiceName, number> {
  const read = (variable: string, fallback: number) => {
    const text = env[variable];
    const n = text === undefined || text === "" ? fallback : Number(text);
    if (!Number.isInteger(n) || n < 1 || n > 16)
      throw new Error(`${variable} must be a whole number from 1 to 16, got "${text}"`);
    return n;
  };
  const all = read("DPP_REPLICAS", 1);
  const counts = {} as Record<ServiceName, number>;
  for (const s of loadRegistry())
    counts[s.name] = read(`${s.name.toUpperCase().replace(/-/g, "_")}_REPLICAS`, all);
  return counts;
}
