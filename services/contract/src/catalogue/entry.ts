/** One type of the event catalogue: when it is emitted and the fields of its `related` object. */
export interface CatalogueEntry<R> {
  description: string;
  /** Field names of `related`, for documentation. */
  related: readonly (keyof R & string)[];
  /** Phantom: the TypeScript type of `related`. */
  _related?: R;
}

/**
 * An entry of a service's own catalogue file (services/contract/src/catalogue/<service>.ts, merged into
 * EVENT_CATALOGUE by catalogue/index.generated.ts):
 *
 *   export interface WidgetRelated { object: "widget"; id: string; name: string }
 *   export const EVENTS = {
 *     "widget.created": catalogueEntry<WidgetRelated>("A widget was created.", ["object", "id", "name"]),
 *   };
 */
export function catalogueEntry<R>(
  description: string,
  related: readonly (keyof R & string)[],
): CatalogueEntry<R> {
  return { description, related };
}
