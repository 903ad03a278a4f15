/** CRC32C (Castagnoli) through @node-rs/crc32's SSE4.2/ARMv8 hardware path: every stored member, page and shard. */
import { createRequire } from 'node:module';

type NodeRsCrc32c = (data: Uint8Array, previous: number) => number;
let nodeRs: NodeRsCrc32c | undefined;

/** @node-rs/crc32, loaded on first use: a thread whose checksums all go through the native addon never pays for it. */
function nodeRsCrc32c(data: Uint8Array, previous: number): number {
  nodeRs ??= (createRequire(import.meta.url)('@node-rs/crc32') as { crc32c: NodeRsCrc32c }).crc32c;
  return nodeRs(data, previous);
}

/** A CRC32C implementation: `previous` continues a running checksum (0 to start). */
export type Crc32cFunction = (data: Uint8Array, previous: number) => number;

let faster: Crc32cFunction | undefined;

/**
 * Installs a faster implementation of the same function for this thread (shardkit's native addon has one, 3-5x
 * faster on long buffers), or removes it with undefined. Property tests hold it equal to {@link crc32cReference}.
 */
export function useCrc32c(implementation: Crc32cFunction | undefined): void {
  faster = implementation;
}

/** CRC32C of `data`, continuing from `previous` for streaming use (start with 0). */
export function crc32c(data: Uint8Array, previous = 0): number {
  return (faster === undefined ? nodeRsCrc32c(data, previous) : faster(data, previous)) >>> 0;
}

/** Always @node-rs/crc32: the reference a faster implementation is tested against. */
export function crc32cReference(data: Uint8Array, previous = 0): number {
  return nodeRsCrc32c(data, previous) >>> 0;
}

/** CRC32C as 8 lowercase hex digits, as the manifest stores it. */
export function crc32cHex(value: number): string {
  return (value >>> 0).toString(16).padStart(8, '0');
}
