/**
 * What a leaf page's records hold, as formats/SPEC.md ("Leaf record") lays them out, and the columns a decoded leaf
 * keeps them in (LeafPage.rows and memberRows). index-page.ts (encoder, page decoder) and leaf-decode.ts (the record
 * decoder) both follow these; index-page.ts exports them.
 */

/** Record flag bits: what a leaf record takes from the previous record of its page instead of storing it. */
export const RECORD_SAME_SHARD = 0x01;
/** The span starts where the previous record's span ends (implies SAME_SHARD). */
export const RECORD_CONTIGUOUS = 0x02;
/** Same member count, and each member's extension, codec and gap equal the previous record's. */
export const RECORD_SAME_SHAPE = 0x04;
export const RECORD_KNOWN_FLAGS = RECORD_SAME_SHARD | RECORD_CONTIGUOUS | RECORD_SAME_SHAPE;

/** Member flag bits (low nibble is the codec). */
export const MEMBER_CODEC_MASK = 0x0f;
/** The member's extension equals the extension of the member at the same index in the previous record. */
export const MEMBER_EXT_SAME = 0x10;
export const MEMBER_KNOWN_FLAGS = MEMBER_CODEC_MASK | MEMBER_EXT_SAME;

/** The fewest bytes a member's record takes: flags, gap and size (a byte each at least) and its CRC-32C (4). */
export const MIN_MEMBER_BYTES = 7;

/**
 * Columns of LeafPage.rows: record i's are at i * RECORD_COLUMNS + column. A record of one member stored
 * uncompressed (which then fills its span) has that member's CRC32C and extension in loneCrc32c and loneExt; any
 * other has -1 there. A decoded leaf keeps no member row for a lone record (its firstMember is -1): see
 * leaf-decode.ts keptMemberRows.
 */
export const RecordColumn = { shard: 0, offset: 1, length: 2, firstMember: 3, memberCount: 4, loneCrc32c: 5, loneExt: 6 } as const;
export const RECORD_COLUMNS = 7;
/** Columns of LeafPage.memberRows: member rows of record i start at its firstMember. */
export const MemberColumn = { offset: 0, size: 1, storedSize: 2, codec: 3, crc32c: 4, ext: 5 } as const;
export const MEMBER_COLUMNS = 6;
