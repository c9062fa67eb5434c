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
