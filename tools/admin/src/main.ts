import path from "node:path";
import { errorJson, runAdmin } from "./cli";

const root = path.resolve(__dirname, "../../..");

runAdmin(process.argv.slice(2), root)
  .then((out) => {
    process.stdout.write(JSON.stringify(out, null, 2) + "\n");
  })
  .catch((err: unknown) => {
    process.stderr.write(JSON.stringify(errorJson(err), null, 2) + "\n");
    process.exitCode = 1;
  });
