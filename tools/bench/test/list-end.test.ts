/**
 * The load generator follows a list's cursor from the page's end: it must read the same `has_more` and
 * `next_cursor` a whole parse reads, for both stacks' pages, and parse the page whole when its end is not the
 * envelope's two fields.
 */
import { listEnd } from "../src/cases";

const page = (fields: Record<string, unknown>) => Buffer.from(JSON.stringify(fields));
const events = Array.from({ length: 3 }, (_, i) => ({
  id: `evt_${i}`,
  type: "passport.created",
  // An event can carry a nested object with the same names: only the envelope's end counts.
  data: { object: { id: `pp_${i}`, has_more: i % 2 === 0, next_cursor: `inner-${i}` } },
}));

test("reads has_more and next_cursor from the end of a page", () => {
  const raw = page({ object: "list", data: events, has_more: true, next_cursor: "Y3Vyc29y" });
  expect(listEnd(raw)).toEqual({ has_more: true, next_cursor: "Y3Vyc29y" });
});

test("reads the last page (no cursor) and an empty page", () => {
  expect(listEnd(page({ object: "list", data: events, has_more: false, next_cursor: null }))).toEqual({
    has_more: false,
    next_cursor: null,
  });
  expect(listEnd(page({ object: "list", data: [], has_more: false, next_cursor: "c" }))).toEqual({
    has_more: false,
    next_cursor: "c",
  });
});

test("a cursor holding escaped characters is read as JSON reads it", () => {
  const raw = page({ object: "list", data: [], has_more: true, next_cursor: 'a"b\\c\u00e9' });
  expect(listEnd(raw)).toEqual({ has_more: true, next_cursor: 'a"b\\c\u00e9' });
});

test("a page whose envelope does not end with the two fields is parsed whole", () => {
  // next_cursor before has_more: the end holds one field.
  const reordered = page({ object: "list", data: events, next_cursor: "outer", has_more: true });
  expect(listEnd(reordered)).toEqual({ has_more: true, next_cursor: "outer" });
  // The envelope's fields first: the last `,"has_more":` is an event's, whose end is not a JSON object.
  const first = page({ has_more: false, next_cursor: "outer", object: "list", data: events });
  expect(listEnd(first)).toEqual({ has_more: false, next_cursor: "outer" });
});
