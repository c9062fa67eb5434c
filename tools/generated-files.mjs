// What every generator of this repository shares: comparing its fresh render with the committed files.
import fs from "node:fs";
import path from "node:path";

/** The files (paths relative to root) whose committed content differs from `rendered` ({file: text}). */
export function staleOf(root, rendered) {
  return Object.entries(rendered)
    .filter(([file, text]) => {
      const p = path.join(root, file);
      return !fs.existsSync(p) || fs.readFileSync(p, "utf8") !== text;
    })
    .map(([file]) => file);
}
