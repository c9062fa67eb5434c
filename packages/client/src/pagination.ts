/**
 * Lists as async iterators: `for await (const item of client.passports.list())` reads page after page
 * until `has_more` is false. The event feed's `next_cursor` is always a string; after the loop,
 * `cursor` holds it, so a later `list({ cursor })` reads on from there (events that arrived since).
 */
export interface Page<T> {
  object: "list";
  data: T[];
  has_more: boolean;
  next_cursor: string | null;
}

export class ListIterator<T> implements AsyncIterable<T> {
  /** The `next_cursor` of the last page read (null before the first page, or after a last page without one). */
  cursor: string | null = null;

  constructor(
    private readonly fetchPage: (cursor: string | undefined) => Promise<Page<T>>,
    private readonly startCursor?: string,
  ) {}

  /** Page by page, from the start cursor to the last page. */
  async *pages(): AsyncGenerator<Page<T>, void, undefined> {
    let cursor = this.startCursor;
    for (;;) {
      const page = await this.fetchPage(cursor);
      this.cursor = page.next_cursor;
      yield page;
      if (!page.has_more || page.next_cursor === null) return;
      cursor = page.next_cursor;
    }
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<T, void, undefined> {
    for await (const page of this.pages()) yield* page.data;
  }

  /** Every item, read to the end (at most `max`, default 10 000). */
  async toArray(max = 10_000): Promise<T[]> {
    const out: T[] = [];
    for await (const item of this) {
      out.push(item);
      if (out.length >= max) break;
    }
    return out;
  }
}
