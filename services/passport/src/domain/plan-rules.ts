/** The plan refusals of live-mode writes are the kit's (services/kit/src/plan-rules.ts), shared with imports. */
export { assertLiveWriteAllowed, liveWriteRefusal } from "@dpp/kit";
