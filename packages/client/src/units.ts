/**
 * The units of battery passports: `dpp.organization(id).units.create(passportId, [...])`, `.list(passportId)`,
 * `.changeStatus(passportId, unitId, status)`, `.recordReading(...)` and `.readings(...)` (lists are async
 * iterators). Writes take an Idempotency-Key (a fresh one unless given).
 */
import {
  Core,
  readSettings,
  writeSettings,
  type RequestOptions,
  type WithResponse,
  type WriteOptions,
} from "./core";
import type { components } from "./openapi.generated";
import type { ListIterator } from "./pagination";

export type Unit = components["schemas"]["Unit"];
/** A page of units: the generated `List & { data: Unit[] }` with `data` typed as the items alone. */
export type UnitList = Omit<components["schemas"]["UnitList"], "data"> & { data: Unit[] };
export type UnitReading = components["schemas"]["UnitReading"];
export type NewUnit = components["schemas"]["CreateUnitsRequest"]["units"][number];
export type NewUnitReading = components["schemas"]["RecordUnitReadingRequest"];

export interface ListUnitsParams {
  status?: "original" | "repurposed" | "re-used" | "remanufactured" | "waste";
  unit_serial?: string;
  limit?: number;
  cursor?: string;
}

export interface ListReadingsParams {
  field?: string;
  limit?: number;
  cursor?: string;
}

/** The units of one organization's battery passports, in the key's mode. */
export class Units {
  constructor(
    private readonly core: Core,
    private readonly organization: string,
  ) {}

  private path(id: string) {
    return { path: { organization: this.organization, id } };
  }

  private unitPath(id: string, unitId: string) {
    return { path: { organization: this.organization, id, unitId } };
  }

  /** Adds 1 to 1000 units, all or none. */
  async create(
    passportId: string,
    units: NewUnit[],
    options: WriteOptions = {},
  ): Promise<WithResponse<UnitList>> {
    return this.core.send(writeSettings(options), (fetch) =>
      this.core.api.POST("/organizations/{organization}/passports/{id}/units", {
        params: this.path(passportId),
        body: { units },
        fetch,
      }),
    );
  }

  /** The passport's units in the order they were added, page after page. */
  list(passportId: string, params: ListUnitsParams = {}, options: RequestOptions = {}): ListIterator<Unit> {
    const { cursor: start, ...filters } = params;
    return this.core.list(
      (cursor) =>
        this.core.send(readSettings(options), (fetch) =>
          this.core.api.GET("/organizations/{organization}/passports/{id}/units", {
            params: { ...this.path(passportId), query: { ...filters, ...(cursor ? { cursor } : {}) } },
            fetch,
          }),
        ),
      start,
    );
  }

  /** Moves a unit's status (null clears it, refused once it has one). */
  async changeStatus(
    passportId: string,
    unitId: string,
    status: string | null,
    options: WriteOptions = {},
  ): Promise<WithResponse<Unit>> {
    return this.core.send(writeSettings(options), (fetch) =>
      this.core.api.POST("/organizations/{organization}/passports/{id}/units/{unitId}/status", {
        params: this.unitPath(passportId, unitId),
        body: { status },
        fetch,
      }),
    );
  }

  /** Records one reading of one field of the unit. */
  async recordReading(
    passportId: string,
    unitId: string,
    reading: NewUnitReading,
    options: WriteOptions = {},
  ): Promise<WithResponse<UnitReading>> {
    return this.core.send(writeSettings(options), (fetch) =>
      this.core.api.POST("/organizations/{organization}/passports/{id}/units/{unitId}/readings", {
        params: this.unitPath(passportId, unitId),
        body: reading,
        fetch,
      }),
    );
  }

  /** The unit's readings in the order recorded, page after page. */
  readings(
    passportId: string,
    unitId: string,
    params: ListReadingsParams = {},
    options: RequestOptions = {},
  ): ListIterator<UnitReading> {
    const { cursor: start, ...filters } = params;
    return this.core.list(
      (cursor) =>
        this.core.send(readSettings(options), (fetch) =>
          this.core.api.GET("/organizations/{organization}/passports/{id}/units/{unitId}/readings", {
            params: {
              ...this.unitPath(passportId, unitId),
              query: { ...filters, ...(cursor ? { cursor } : {}) },
            },
            fetch,
          }),
        ),
      start,
    );
  }
}
