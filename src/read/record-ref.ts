/**
 * A located sample as the loader carries it through a batch: its span (what read planning needs) and where its
 * index record is (a decoded leaf and the slot in it), so reading and decoding take the rest from the leaf's columns
 * (LeafPage.rows) instead of the entry objects, which lie apart on the heap (see Dataset.readRecordSync).
 */
import type { IndexEntry } from '../../formats/index-entry.js';
import { entryAt, RECORD_COLUMNS, RecordColumn, type LeafPage } from '../../formats/index-page.js';
import type { SpanRequest } from './fetch-plan.js';

export interface RecordRef extends SpanRequest {
  leaf: LeafPage;
  slot: number;
}

export function recordRef(leaf: LeafPage, slot: number): RecordRef {
  const r = slot * RECORD_COLUMNS;
  const rows = leaf.rows;
  return { shard: rows[r + RecordColumn.shard] as number, offset: rows[r + RecordColumn.offset] as number, length: rows[r + RecordColumn.length] as number, leaf, slot };
}

/** The record's entry object: for compressed members and for the errors that name a sample. */
export function entryOf(ref: RecordRef): IndexEntry {
  return entryAt(ref.leaf, ref.slot);
}

/** Whether record `slot` is one member stored uncompressed (its CRC32C and extension are in its row). */
export function isLone(leaf: LeafPage, slot: number): boolean {
  return (leaf.rows[slot * RECORD_COLUMNS + RecordColumn.loneCrc32c] as number) >= 0;
}
