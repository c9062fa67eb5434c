import { configureTextEncoding, getTextEncoding } from "@bufbuild/protobuf/wire";

/**
 * protobuf-es encodes every string field with TextEncoder.encode, a call into C++ that cost about 0.8 µs for
 * a 30-byte id on the benchmark machine: half of toBinary's time for a passport message, which every answer
 * and every request of a gRPC call pays. Buffer.from writes the same bytes (UTF-8, a lone surrogate as U+FFFD,
 * as TextEncoder does) from node's pooled allocation, about ten times faster for such strings; protobuf-es
 * copies the chunk into the message's bytes, so the pool's slab is never kept. configureTextEncoding is
 * protobuf-es' own hook for this; decoding and the UTF-8 check stay its defaults. Process-wide and idempotent:
 * the gRPC adapter calls it when it is loaded.
 */
export function useFastUtf8Encoding(): void {
  const defaults = getTextEncoding();
  if ((defaults as { kitFast?: boolean }).kitFast) return;
  configureTextEncoding({
    encodeUtf8: (text: string) => Buffer.from(text, "utf8"),
    decodeUtf8: (bytes: Uint8Array, strict?: boolean) => defaults.decodeUtf8(bytes, strict),
    checkUtf8: (text: string) => defaults.checkUtf8(text),
    kitFast: true,
  } as Parameters<typeof configureTextEncoding>[0]);
}
