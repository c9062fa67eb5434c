/** node-postgres' own conversion of a query value to the text (or bytes) it sends; not in @types/pg. */
declare module "pg/lib/utils" {
  export function prepareValue(value: unknown): string | Buffer | null;
}
