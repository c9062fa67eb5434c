/**
 * What the public surface shows of a passport, read from its owners (passport, documents, variants-units) with the
 * public surface's own signed calls, and kept in memory: a scan or a page view is answered from memory, and the
 * owners (Postgres) are asked again only when the entry is older than PUBLIC_CACHE_TTL_MS (a miss is kept as
 * long; an entry still being read is refreshed ahead in the background). So an unpublish stops resolution within
 * that lifetime (docs/decisions/0059-public-surface.md).
 */
import { ApiError } from "@dpp/contract";
import type { ClientOf, RequestContext } from "@dpp/kit";
import { documentsV1, passportV1, variantsUnitsV1 } from "@dpp/proto";

export type PassportClient = ClientOf<typeof passportV1.PassportService>;
export type DocumentsClient = ClientOf<typeof documentsV1.DocumentsService>;
export type VariantsUnitsClient = ClientOf<typeof variantsUnitsV1.VariantsUnitsService>;

export interface PublicDocument {
  id: string;
  type: string;
  name: string;
  mimeType: string;
  fileSize: number;
}

export interface PublicVariant {
  gtin14: string;
  size: string | null;
  colour: string | null;
}

export interface PublicUnit {
  serial: string;
  status: string | null;
}

/** A field of the category schema as the page labels it. */
export interface FieldInfo {
  title: string;
  /** x-access-tier: only "public" fields are ever shown. */
  tier: string;
  environmental: boolean;
  unit?: string;
  /** Titles (descriptions when untitled) of an object list's item members. */
  members?: Record<string, string>;
}

export interface PublicView {
  id: string;
  organizationId: string;
  category: string;
  categoryName: string;
  version: number;
  gtin14: string | null;
  serial: string | null;
  publishedAt: string | null;
  updatedAt: string | null;
  /** Public-tier members of `data` only (passport filters them). */
  data: Record<string, unknown>;
  publicUrl: string;
  qrTarget: string;
  digitalLink: string | null;
  variants: PublicVariant[];
  units: PublicUnit[];
  documents: PublicDocument[];
  fields: Record<string, FieldInfo>;
  /** Changes whenever anything shown changes: the ETags of every answer derive from it. */
  revision: string;
}

/** A hit: the view, and the variant GTIN the lookup named (null: the passport's own GTIN, or by id). */
export interface Found {
  view: PublicView;
  variantGtin14: string | null;
}

interface Entry {
  at: number;
  value: Found | null;
  /** Answers rendered from this entry (bodies and their ETags), by format and language. */
  rendered: Map<string, unknown>;
}

export interface ViewsOptions {
  passport: PassportClient;
  documents: DocumentsClient;
  variantsUnits: VariantsUnitsClient;
  ttlMs: number;
  maxEntries: number;
  now?: () => number;
}

const LIST_PAGE = 100;
/** At most this many variants, units and documents are read for a page (pages of 100). */
const LIST_MAX = 500;

export class PublicViews {
  private readonly entries = new Map<string, Entry>();
  private readonly categories = new Map<string, { name: string; fields: Record<string, FieldInfo> }>();
  private readonly inflight = new Map<string, Promise<Entry>>();
  /** Owner reads made (cache misses), for tests and the bench. */
  reads = 0;

  constructor(private readonly o: ViewsOptions) {}

  private now() {
    return (this.o.now ?? Date.now)();
  }

  byId(id: string): Promise<Entry> {
    return this.get(`id:${id}`, { case: "id", value: id });
  }

  byGtin(gtin14: string): Promise<Entry> {
    return this.get(`gtin:${gtin14}`, { case: "gtin14", value: gtin14 });
  }

  /** Drops the entries of one passport (or all); the count dropped. */
  purge(passportId?: string): number {
    let n = 0;
    for (const [k, e] of this.entries)
      if (!passportId || e.value?.view.id === passportId || k === `id:${passportId}`) {
        this.entries.delete(k);
        n++;
      }
    return n;
  }

  private async get(key: string, lookup: { case: "id" | "gtin14"; value: string }): Promise<Entry> {
    const e = this.entries.get(key);
    if (e && this.now() - e.at < this.o.ttlMs) {
      // Refresh ahead: an entry read in the second half of its life is read again from its owners in the
      // background, so a passport that keeps being scanned never makes a scan wait for them; nothing older than
      // the TTL is ever answered.
      if (this.now() - e.at >= this.o.ttlMs / 2 && !this.inflight.has(key))
        this.refresh(key, lookup).catch(() => undefined);
      return e;
    }
    return this.inflight.get(key) ?? this.refresh(key, lookup);
  }

  private refresh(key: string, lookup: { case: "id" | "gtin14"; value: string }): Promise<Entry> {
    const started = this.now();
    const p = this.load(lookup)
      .then((value) => {
        const entry: Entry = { at: started, value, rendered: new Map() };
        this.entries.delete(key);
        this.entries.set(key, entry);
        if (this.entries.size > this.o.maxEntries) {
          const oldest = this.entries.keys().next().value;
          if (oldest !== undefined) this.entries.delete(oldest);
        }
        return entry;
      })
      .finally(() => this.inflight.delete(key));
    this.inflight.set(key, p);
    return p;
  }

  private async load(lookup: { case: "id" | "gtin14"; value: string }): Promise<Found | null> {
    this.reads++;
    const ctx: RequestContext = { requestId: `public_${Date.now().toString(36)}` };
    let res: passportV1.FindPublicPassportResponse;
    try {
      res = await this.o.passport.findPublicPassport({ key: lookup }, { context: ctx });
    } catch (err) {
      if (err instanceof ApiError && err.code === "resource_not_found") return null;
      throw err;
    }
    return { view: await this.build(res.passport!, res.links!), variantGtin14: res.variantGtin14 || null };
  }

  /**
   * What the public page would show of a passport of any status and mode, for its organization's own people
   * (preview_url, whose token named the organization and mode): read afresh, never cached, public tier only.
   */
  async preview(id: string, organizationId: string, livemode: boolean): Promise<PublicView | null> {
    const ctx: RequestContext = { requestId: `preview_${Date.now().toString(36)}`, organizationId, livemode };
    try {
      const [p, l] = await Promise.all([
        this.o.passport.getPassport({ id }, { context: ctx }),
        this.o.passport.getPassportLinks({ id }, { context: ctx }),
      ]);
      return await this.build(p.passport!, l.links!, livemode);
    } catch (err) {
      if (err instanceof ApiError && err.code === "resource_not_found") return null;
      throw err;
    }
  }

  private async build(
    p: passportV1.Passport,
    l: passportV1.PassportLinks,
    livemode = true,
  ): Promise<PublicView> {
    const tenant: RequestContext = {
      requestId: `public_${Date.now().toString(36)}`,
      organizationId: p.organizationId,
      livemode,
    };
    const [documents, variants, units, category] = await Promise.all([
      this.documentsOf(tenant, p.id),
      this.variantsOf(tenant, p.id),
      p.category === "battery" ? this.unitsOf(tenant, p.id) : Promise.resolve([]),
      this.category(p.category),
    ]);
    const view: PublicView = {
      id: p.id,
      organizationId: p.organizationId,
      category: p.category,
      categoryName: category.name,
      version: p.version,
      gtin14: l.gs1DigitalLink?.gtin14 ?? null,
      serial: p.serialNumber ?? null,
      publishedAt: p.publishedAt ? new Date(Number(p.publishedAt.seconds) * 1000).toISOString() : null,
      updatedAt: p.updatedAt ? new Date(Number(p.updatedAt.seconds) * 1000).toISOString() : null,
      data: publicOnly(JSON.parse(p.dataJson || "{}") as Record<string, unknown>, category.fields),
      publicUrl: l.publicUrl,
      qrTarget: l.qrTarget,
      digitalLink: l.gs1DigitalLink?.uri ?? null,
      variants,
      units,
      documents,
      fields: category.fields,
      revision: "",
    };
    view.revision = revisionOf(view);
    return view;
  }

  private async documentsOf(ctx: RequestContext, passportId: string): Promise<PublicDocument[]> {
    const out: PublicDocument[] = [];
    let cursor = "";
    do {
      const page = await this.o.documents.listDocuments(
        { passportId, accessTier: "public", limit: LIST_PAGE, cursor },
        { context: ctx },
      );
      for (const d of page.documents)
        if (d.accessTier === "public" && d.uploadState === "ready")
          out.push({
            id: d.id,
            type: d.type,
            name: d.displayName || d.fileName,
            mimeType: d.mimeType,
            fileSize: Number(d.fileSize),
          });
      cursor = page.hasMore ? page.nextCursor : "";
    } while (cursor && out.length < LIST_MAX);
    return out;
  }

  private async variantsOf(ctx: RequestContext, passportId: string): Promise<PublicVariant[]> {
    const out: PublicVariant[] = [];
    let cursor = "";
    do {
      const page = await this.o.variantsUnits.listVariants(
        { passportId, limit: LIST_PAGE, cursor },
        { context: ctx },
      );
      for (const v of page.variants)
        out.push({ gtin14: v.gtin, size: v.size ?? null, colour: v.colour ?? null });
      cursor = page.hasMore ? page.nextCursor : "";
    } while (cursor && out.length < LIST_MAX);
    return out;
  }

  private async unitsOf(ctx: RequestContext, passportId: string): Promise<PublicUnit[]> {
    const out: PublicUnit[] = [];
    let cursor = "";
    do {
      const page = await this.o.variantsUnits.listUnits(
        { passportId, limit: LIST_PAGE, cursor },
        { context: ctx },
      );
      for (const u of page.units) out.push({ serial: u.unitSerial, status: u.status || null });
      cursor = page.hasMore ? page.nextCursor : "";
    } while (cursor && out.length < LIST_MAX);
    return out;
  }

  /** A category's labels, read once per process (a category's schema changes only with a release). */
  private async category(id: string) {
    const known = this.categories.get(id);
    if (known) return known;
    const res = await this.o.passport.getCategorySchema(
      { category: id },
      { context: { requestId: "public_categories" } },
    );
    const schema = JSON.parse(res.schemaJson) as { properties?: Record<string, Record<string, unknown>> };
    const fields: Record<string, FieldInfo> = {};
    for (const [k, s] of Object.entries(schema.properties ?? {})) {
      const info: FieldInfo = {
        title: typeof s.title === "string" ? s.title : k,
        tier: typeof s["x-access-tier"] === "string" ? s["x-access-tier"] : "public",
        environmental: s["x-environmental"] === true,
      };
      if (typeof s["x-unit"] === "string") info.unit = s["x-unit"];
      const items = s.items as { properties?: Record<string, Record<string, unknown>> } | undefined;
      if (items?.properties) {
        info.members = {};
        for (const [m, ms] of Object.entries(items.properties))
          info.members[m] = typeof ms.title === "string" ? ms.title : m;
      }
      fields[k] = info;
    }
    const c = { name: res.category?.displayName || id, fields };
    this.categories.set(id, c);
    return c;
  }
}

/** The members of `data` whose field is public (passport cuts them already for a public read; a preview's read is whole). */
function publicOnly(
  data: Record<string, unknown>,
  fields: Record<string, FieldInfo>,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(data)) if (fields[k]?.tier === "public") out[k] = v;
  return out;
}

/** A short digest of everything shown: the passport's version and what its owners answered. */
function revisionOf(v: PublicView): string {
  // FNV-1a over the JSON of what is shown: enough to tell two revisions apart, cheap to compute once per read.
  const text = JSON.stringify([v.version, v.data, v.variants, v.units, v.documents, v.publicUrl, v.qrTarget]);
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return `${v.id}-${v.version}-${h.toString(36)}`;
}

/** An entry's rendered answer of `key`, made once per entry. */
export function renderedOnce<T>(entry: { rendered: Map<string, unknown> }, key: string, make: () => T): T {
  let r = entry.rendered.get(key) as T | undefined;
  if (r === undefined) {
    r = make();
    entry.rendered.set(key, r);
  }
  return r;
}
