import { isCatalogued } from "@dpp/contract";
import {
  PASSPORT_STATUSES,
  PUBLIC_STATUSES,
  TRANSITIONS,
  editRefusal,
  transitionRefusal,
  type TransitionName,
} from "./lifecycle";

describe("the passport state machine", () => {
  const names = Object.keys(TRANSITIONS) as TransitionName[];

  it("allows exactly the table's moves and refuses every other status", () => {
    const allowed: string[] = [];
    for (const name of names)
      for (const status of PASSPORT_STATUSES)
        if (!transitionRefusal(name, status, "pp_1"))
          allowed.push(`${status} -${name}-> ${TRANSITIONS[name].to}`);
    expect(allowed.sort()).toEqual(
      [
        "draft -publish-> published",
        "published -unpublish-> draft",
        "deactivated -unpublish-> draft",
        "draft -trash-> trashed",
        "trashed -restore-> draft",
        "published -deactivate-> deactivated",
        "deactivated -reactivate-> published",
        "published -lock-> readonly",
        "readonly -unlock-> published",
      ].sort(),
    );
  });

  it("refuses restore with not_trashed and the others with wrong_status, naming the status", () => {
    expect(transitionRefusal("restore", "draft", "pp_1")).toMatchObject({
      code: "not_trashed",
      details: { status: "draft", passport_id: "pp_1" },
    });
    expect(transitionRefusal("publish", "trashed", "pp_1")).toMatchObject({
      code: "wrong_status",
      details: { status: "trashed", operation: "publish", allowed_statuses: ["draft"] },
    });
  });

  it("emits a catalogued event for every transition", () => {
    for (const name of names) expect(isCatalogued(TRANSITIONS[name].event)).toBe(true);
  });

  it("lets PATCH change draft, published and deactivated passports only", () => {
    expect(PASSPORT_STATUSES.filter((s) => !editRefusal(s, "pp_1"))).toEqual([
      "draft",
      "published",
      "deactivated",
    ]);
    expect(editRefusal("readonly", "pp_1")?.code).toBe("wrong_status");
  });
});

describe("PUBLIC_STATUSES", () => {
  it("are the statuses the public read's SQL and its partial index name (migration 0007_public_lookups)", () => {
    expect(PUBLIC_STATUSES).toEqual(["published", "readonly"]);
  });
});
