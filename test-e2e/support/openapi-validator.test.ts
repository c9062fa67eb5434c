/** The contract check of e2e responses refuses what the OpenAPI document does not describe. */
import { ContractValidator, type ObservedResponse } from "./openapi-validator";

const v = ContractValidator.fromSource();
const RID = "req_0123456789abcdef01234567";

function res(over: Partial<ObservedResponse> & { body?: unknown }): ObservedResponse {
  const body = over.body;
  const headers = new Headers({ "request-id": RID, "content-type": "application/json; charset=utf-8" });
  for (const [k, val] of over.headers ?? []) headers.set(k, val);
  return {
    method: "GET",
    path: "/organizations/org_1/passports/pp_1",
    status: 200,
    text: body === undefined ? "" : JSON.stringify(body),
    ...over,
    headers,
    body,
  };
}

const passport = {
  object: "passport",
  id: "pp_1",
  name: "organizations/org_1/passports/pp_1",
  organization_id: "org_1",
  category: "textile",
  status: "draft",
  gtin: "04006381333931",
  serial_number: null,
  external_id: "SKU-1",
  version: 1,
  livemode: false,
  registry_id: null,
  created_at: "2026-08-01T12:00:00.000Z",
  updated_at: "2026-08-01T12:00:00.000Z",
  published_at: null,
  trashed_at: null,
  data: { product_name: "T-shirt" },
};

const envelope = (code: string, details: Record<string, unknown> = {}) => ({
  error: {
    code,
    message: "m",
    documentation_url: `https://docs.dpp.example/errors/${code}`,
    request_id: RID,
    details,
  },
});

it("accepts a documented response", () => {
  expect(v.check(res({ body: passport })).problems).toEqual([]);
  const list = { object: "list", data: [passport], has_more: false, next_cursor: null };
  expect(v.check(res({ path: "/organizations/org_1/passports?limit=5", body: list })).problems).toEqual([]);
});

it("refuses a missing required field, a wrong type, an undocumented field and a bad enum value", () => {
  const { version: _v, ...noVersion } = passport;
  expect(v.check(res({ body: noVersion })).problems.join()).toMatch(/must have required property 'version'/);
  expect(v.check(res({ body: { ...passport, version: "1" } })).problems.join()).toMatch(
    /version must be integer/,
  );
  expect(v.check(res({ body: { ...passport, secret: 1 } })).problems.join()).toMatch(/"secret"/);
  expect(v.check(res({ body: { ...passport, status: "archived" } })).problems.join()).toMatch(
    /allowed values/,
  );
});

it("refuses an undocumented status, a code answered with another status and a missing Request-Id", () => {
  expect(v.check(res({ status: 418, body: envelope("invalid_request") })).problems.join()).toMatch(
    /status 418 is not documented for getPassport/,
  );
  expect(v.check(res({ status: 404, body: envelope("invalid_request") })).problems.join()).toMatch(
    /invalid_request is documented with 400, answered with 404/,
  );
  const noId = res({ body: passport });
  noId.headers.delete("request-id");
  expect(v.check(noId).problems).toEqual(["missing header Request-Id"]);
});

it("refuses an error body that is not the envelope or carries an unknown code", () => {
  expect(v.check(res({ status: 404, body: { message: "not found" } })).problems.join()).toMatch(
    /without an error envelope/,
  );
  expect(v.check(res({ status: 404, body: envelope("no_such_code") })).problems.join()).toMatch(
    /not in the ErrorCode enum/,
  );
});

it("checks undocumented paths and methods as envelope-only", () => {
  const unknown = res({
    path: "/nothing",
    status: 404,
    body: envelope("resource_not_found", { path: "/v1/nothing" }),
  });
  expect(v.check(unknown).problems).toEqual([]);
  expect(v.check({ ...unknown, status: 200, body: {} }).problems.join()).toMatch(/undocumented operation/);
  const put = res({
    method: "PUT",
    status: 405,
    body: envelope("method_not_allowed", { allow: ["GET", "HEAD"] }),
  });
  expect(v.check(put).problems).toEqual(["missing header Allow"]);
  put.headers.set("allow", "GET, HEAD");
  expect(v.check(put).problems).toEqual([]);
  // A path parameter that is not percent-encoded UTF-8 is refused before the method is looked at.
  const badParam = res({
    method: "PATCH",
    path: "/organizations/%FF/passports/",
    status: 400,
    body: envelope("invalid_request", {}),
  });
  expect(v.check(badParam).problems).toEqual([]);
  expect(v.check({ ...badParam, path: "/organizations/org_1/passports/" }).problems.join()).toMatch(
    /expected 405/,
  );
});

it("checks a passport's data against its category's schema, and accepts a category it does not know", () => {
  const withData = (data: Record<string, unknown>, category = "textile") =>
    res({ body: { ...passport, category, data } });
  expect(
    v.check(withData({ product_name: "T", material_composition: [{ fiber: "cotton", percentage: 100 }] }))
      .problems,
  ).toEqual([]);
  expect(v.check(withData({ product_name: 5 })).problems.join()).toMatch(/product_name/);
  expect(v.check(withData({ colour_of_sky: "blue" })).problems.join()).toMatch(/colour_of_sky/);
  // A battery field on a textile passport is not a textile field.
  expect(v.check(withData({ battery_model_identifier: "B1" })).problems.join()).toMatch(
    /battery_model_identifier/,
  );
  expect(v.check(withData({ battery_model_identifier: "B1" }, "battery")).problems).toEqual([]);
  // Categories are an open set: a passport of a category added later still matches the document.
  expect(v.check(withData({ anything: { at: "all" } }, "furniture")).problems).toEqual([]);
});
