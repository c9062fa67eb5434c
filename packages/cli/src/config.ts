/**
 * Where the CLI finds its settings. The API key comes from `DPP_API_KEY` or the config file that
 * `dpp login` writes (mode 0600), never from a command-line flag, so that it does not land in shell
 * history. The base URL: `--base-url`, `DPP_BASE_URL`, then the file. The config folder:
 * `DPP_CONFIG_DIR`, else `$XDG_CONFIG_HOME/dpp`, else `~/.config/dpp`; it also holds the cursors that
 * `dpp events tail` saves.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { ConfigError } from "./errors";

export type Env = Record<string, string | undefined>;

export interface ConfigFile {
  api_key?: string;
  base_url?: string;
  /** The organization commands act on when `--org` is not given (default: the key's own). */
  organization?: string;
  /** The signing secret of your webhook endpoint (`whsec_…`), for `dpp webhooks listen`. */
  webhook_secret?: string;
}

export interface Settings {
  apiKey: string;
  baseUrl: string;
  organization: string | undefined;
}

export function configDir(env: Env): string {
  if (env.DPP_CONFIG_DIR) return env.DPP_CONFIG_DIR;
  const base = env.XDG_CONFIG_HOME || path.join(env.HOME || os.homedir(), ".config");
  return path.join(base, "dpp");
}

export const configFile = (env: Env) => path.join(configDir(env), "config.json");

export function readConfig(env: Env): ConfigFile {
  const file = configFile(env);
  let text: string;
  try {
    text = fs.readFileSync(file, "utf8");
  } catch {
    return {};
  }
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed))
      throw new Error("not an object");
    return parsed as ConfigFile;
  } catch (err) {
    throw new ConfigError(`${file} is not a JSON object: ${(err as Error).message}`);
  }
}

export function writeConfig(env: Env, config: ConfigFile): string {
  const file = configFile(env);
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  fs.writeFileSync(file, JSON.stringify(config, null, 2) + "\n", { mode: 0o600 });
  fs.chmodSync(file, 0o600);
  return file;
}

export function resolveSettings(env: Env, flags: { baseUrl?: string; org?: string }): Settings {
  const file = readConfig(env);
  const apiKey = env.DPP_API_KEY || file.api_key;
  if (!apiKey)
    throw new ConfigError(
      "No API key: set DPP_API_KEY, or run `dpp login` to save one in " + configFile(env) + ".",
    );
  const baseUrl = flags.baseUrl || env.DPP_BASE_URL || file.base_url;
  if (!baseUrl)
    throw new ConfigError("No API base URL: pass --base-url, set DPP_BASE_URL, or run `dpp login`.");
  return {
    apiKey,
    baseUrl: baseUrl.replace(/\/+$/, ""),
    organization: flags.org || env.DPP_ORGANIZATION || file.organization,
  };
}

/** The saved cursors of `dpp events tail`, one per API, organization, mode and type filter. */
export class CursorStore {
  constructor(private readonly file: string) {}

  static in(env: Env): CursorStore {
    return new CursorStore(path.join(configDir(env), "cursors.json"));
  }

  private all(): Record<string, string> {
    try {
      return JSON.parse(fs.readFileSync(this.file, "utf8")) as Record<string, string>;
    } catch {
      return {};
    }
  }

  get(key: string): string | undefined {
    return this.all()[key];
  }

  set(key: string, cursor: string): void {
    const all = this.all();
    all[key] = cursor;
    fs.mkdirSync(path.dirname(this.file), { recursive: true, mode: 0o700 });
    const tmp = `${this.file}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, JSON.stringify(all, null, 2) + "\n", { mode: 0o600 });
    fs.renameSync(tmp, this.file);
  }
}
