/**
 * The portal simulator's score: a deterministic, openly SIMPLIFIED stand-in for the official engine. It is not
 * the official method and must never be presented as such; it only gives the simulator a stable number that
 * moves when the declared data moves.
 *
 *   points per kg of each fibre (below; 10 for a fibre not listed) weighted by its share,
 *   × the mass in kg, × a making-up country factor (FR 1.0, EU 1.1, elsewhere or unknown 1.3),
 *   rounded to 2 decimals. standardized = points per 100 g. durability is 1 (no durability data is used).
 */
const FIBRE_POINTS_PER_KG: Record<string, number> = {
  cotton: 12,
  "organic cotton": 9,
  polyester: 9,
  "recycled polyester": 6,
  wool: 30,
  linen: 6,
  elastane: 14,
  polyamide: 11,
  viscose: 10,
};
const EU = new Set(
  "AT BE BG HR CY CZ DK EE FI DE GR HU IE IT LV LT LU MT NL PL PT RO SK SI ES SE".split(" "),
);

/** The engine version the simulator reports: never the official engine's. */
export const SIMULATED_ENGINE_VERSION = "simulated-simplified-1";

export function simulatedScore(d: {
  mass: number;
  materials: { id: string; share: number }[];
  countryMaking: string | null;
}): { score: number; standardized: number; durability: number } {
  const totalShare = d.materials.reduce((s, m) => s + m.share, 0) || 1;
  const perKg = d.materials.reduce(
    (s, m) => s + (FIBRE_POINTS_PER_KG[m.id.toLowerCase()] ?? 10) * (m.share / totalShare),
    0,
  );
  const country = d.countryMaking === "FR" ? 1.0 : d.countryMaking && EU.has(d.countryMaking) ? 1.1 : 1.3;
  const score = Math.round(perKg * (d.mass / 1000) * country * 100) / 100;
  const standardized = Math.round((score / (d.mass / 100)) * 100) / 100;
  return { score, standardized, durability: 1 };
}
