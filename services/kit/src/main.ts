import type { Logger } from "./logger";
import { ConfigError } from "./config";

/**
 * The command line of every service: `migrate` runs its schema migrations and
 * exits (the Helm migrations Job, the local stack before start); `serve` (the
 * default) runs the service until SIGTERM.
 */
export function runMain(
  log: Logger,
  commands: { migrate: () => Promise<void>; serve: () => Promise<void> },
  argv = process.argv.slice(2),
): void {
  const command = argv[0] ?? "serve";
  const fn = command === "migrate" ? commands.migrate : command === "serve" ? commands.serve : undefined;
  if (!fn) {
    log.fatal({ command }, "unknown command; expected 'serve' or 'migrate'");
    process.exit(2);
  }
  fn()
    .then(() => {
      if (command === "migrate") {
        log.info("migrations applied");
        process.exit(0);
      }
    })
    .catch((err: unknown) => {
      if (err instanceof ConfigError) {
        // A configuration problem is the operator's to fix: say what, without a stack trace.
        log.fatal(err.message);
        process.exit(2);
      }
      log.fatal({ err }, `${command} failed`);
      process.exit(1);
    });
}
