import { describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../formats/errors.js';
import { decodeIndexHeader, encodeIndexHeader, HEADER_BYTES } from '../../formats/index-layout.js';
import { LeafRecordEncoder, decodePage, sealPage, PageType, PAGE_FLAGS, PAGE_HEADER_BYTES } from '../../formats/index-page.js';
import { Codec, type IndexEntry } from '../../formats/index-entry.js';
import { utf8Bytes } from '../../formats/bytes.js';
import { flipBits } from '../helpers/checked.js';

const header = {
  layout: 'packed' as const, pageSize: 1024, entryCount: 3, rootPage: 1, height: 1, pageCount: 2, firstLeaf: 1,
  shardCount: 1, tableCrc: 0xdeadbeef, tableOffset: 2048, tableLength: 20, memberCount: 4, spanBytes: 300,
};

describe('index header', () => {
  it('encodes every field at its SPEC offset, little-endian', () => {
    const { page, crc } = encodeIndexHeader(header);
    const hex = Buffer.from(page.subarray(0, HEADER_BYTES)).toString('hex');
    expect(hex.slice(0, 16)).toBe('89534b4944580d0a'); // magic
    expect(hex.slice(16, 24)).toBe('0100' + '01' + '00'); // version 1, layout packed, reserved
    expect(hex.slice(24, 32)).toBe('00040000'); // page size 1024
    expect(hex.slice(32, 48)).toBe('0300000000000000'); // entry count
    expect(hex.slice(48, 56)).toBe('01000000'); // root
    expect(hex.slice(56, 64)).toBe('01000000'); // height
    expect(hex.slice(64, 72)).toBe('02000000'); // page count
    expect(hex.slice(72, 80)).toBe('01000000'); // first leaf
    expect(hex.slice(80, 88)).toBe('01000000'); // shard count
    expect(hex.slice(88, 96)).toBe('efbeadde'); // table crc
    expect(hex.slice(96, 112)).toBe('0008000000000000'); // table offset 2048
    expect(hex.slice(112, 128)).toBe('1400000000000000'); // table length 20
    expect(hex.slice(128, 144)).toBe('0400000000000000'); // members
    expect(hex.slice(144, 160)).toBe('2c01000000000000'); // span bytes 300
    expect(hex.slice(160, 248)).toBe('0'.repeat(88)); // reserved
    expect(page.length).toBe(1024);
    expect(decodeIndexHeader(page, 'i', 2068)).toMatchObject({ ...header, version: 1, crc });
  });

  it('tells wrong magic, future version, damage and truncation apart', () => {
    const { page } = encodeIndexHeader(header);
    const magic = page.slice();
    magic[1] = 0;
    expect(() => decodeIndexHeader(magic, 'i')).toThrow(expect.objectContaining({ code: ErrorCodes.BAD_MAGIC }));
    const future = page.slice();
    future[8] = 2;
    expect(() => decodeIndexHeader(future, 'i')).toThrow(expect.objectContaining({ code: ErrorCodes.UNSUPPORTED_VERSION }));
    const flipped = page.slice();
    flipBits(flipped, 20, 1);
    expect(() => decodeIndexHeader(flipped, 'i')).toThrow(expect.objectContaining({ code: ErrorCodes.CORRUPT_INDEX }));
    expect(() => decodeIndexHeader(page, 'i', 2000)).toThrow(expect.objectContaining({ code: ErrorCodes.TRUNCATED }));
    expect(() => decodeIndexHeader(page.subarray(0, 100), 'i')).toThrow(expect.objectContaining({ code: ErrorCodes.TRUNCATED }));
  });
});

describe('leaf records', () => {
  it('encode keys against the previous record and offsets as deltas, byte for byte', () => {
    const m = (ext: string, offset: number, size: number, crc: number) => ({ ext, offset, size, storedSize: size, codec: Codec.none, crc32c: crc });
    const a: IndexEntry = { key: 'img1', shard: 0, offset: 512, length: 3, members: [m('jpg', 0, 3, 0x01020304)] };
    const b: IndexEntry = { key: 'img2', shard: 0, offset: 1536, length: 3, members: [m('jpg', 0, 3, 0x0a0b0c0d)] };
    const enc = new LeafRecordEncoder();
    const ra = Buffer.from(enc.encode(a, utf8Bytes(a.key))).toString('hex');
    // shared 0, suffix 4 "img1", record flags 0, shard 0, offset 512 (varint 80 04), 1 member:
    // member flags 0, ext len 3 "jpg", gap 0, size 3, crc LE
    expect(ra).toBe('00' + '04' + '696d6731' + '00' + '00' + '8004' + '01' + '00' + '03' + '6a7067' + '00' + '03' + '04030201');
    const rb = Buffer.from(enc.encode(b, utf8Bytes(b.key))).toString('hex');
    // shared 3, suffix "2", record flags SAME_SHARD|SAME_SHAPE (0x05), offset delta zigzag(1536 - 515 = 1021) =
    // 2042 (varint fa 0f); same shape: per member only size 3 and crc LE
    expect(rb).toBe('03' + '01' + '32' + '05' + 'fa0f' + '03' + '0d0c0b0a');
    const c: IndexEntry = { key: 'img3', shard: 0, offset: 1539, length: 4, members: [m('png', 0, 4, 1)] };
    const rc = Buffer.from(enc.encode(c, utf8Bytes(c.key))).toString('hex');
    // contiguous with img2 (1536 + 3): flags SAME_SHARD|CONTIGUOUS (0x03), no offset; new ext: member written out
    expect(rc).toBe('03' + '01' + '33' + '03' + '01' + '00' + '03' + '706e67' + '00' + '04' + '01000000');
    const page = new Uint8Array(1024);
    page.set(Buffer.from(ra + rb + rc, 'hex'), PAGE_HEADER_BYTES);
    sealPage(page, PageType.leaf, 3, 1, 0);
    const decoded = decodePage(page, 1, 'i');
    expect(decoded.type === 'leaf' && decoded.entries).toEqual([a, b, c]);
    flipBits(page, PAGE_HEADER_BYTES + 3, 0x40);
    expect(() => decodePage(page, 1, 'i')).toThrow(expect.objectContaining({ code: ErrorCodes.CORRUPT_INDEX }));
  });

  it('the page checksum covers every byte but its own field, the flags byte included', () => {
    const entry: IndexEntry = { key: 'a', shard: 0, offset: 0, length: 1, members: [{ ext: 'txt', offset: 0, size: 1, storedSize: 1, codec: Codec.none, crc32c: 7 }] };
    const page = new Uint8Array(1024);
    page.set(new LeafRecordEncoder().encode(entry, utf8Bytes(entry.key)), PAGE_HEADER_BYTES);
    sealPage(page, PageType.leaf, 1, 1, 0);
    expect(decodePage(page, 1, 'i').keys).toEqual(['a']);
    page[PAGE_FLAGS] = 0x01;
    expect(() => decodePage(page, 1, 'i')).toThrow(expect.objectContaining({ code: ErrorCodes.CORRUPT_INDEX, message: expect.stringContaining('fails its checksum') }));
  });

  it('regression: a checksummed page claiming a huge key suffix is CORRUPT_INDEX, not an allocation', () => {
    const page = new Uint8Array(1024);
    // shared 0, suffix length 2^40 (varint), then nothing: a hostile page with a valid CRC
    page.set([0x00, 0x80, 0x80, 0x80, 0x80, 0x80, 0x20], PAGE_HEADER_BYTES);
    sealPage(page, PageType.leaf, 1, 1, 0);
    expect(() => decodePage(page, 1, 'i')).toThrow(expect.objectContaining({ code: ErrorCodes.CORRUPT_INDEX }));
  });

  it('regression: a checksummed record claiming more members than its page holds is CORRUPT_INDEX, not an allocation', () => {
    // shared 0, suffix 1 "k", flags 0, shard 0, offset 0, then the member count: 2^32 - 1 ... 2^53 - 1, and 147, one
    // more than the rest of a 1 KiB page could hold at 7 bytes a member
    for (const count of [2 ** 32 - 1, 2 ** 32, 2 ** 53 - 1, 147]) {
      const page = new Uint8Array(1024);
      const varint: number[] = [];
      for (let v = count; ; v = Math.floor(v / 128)) {
        if (v < 128) {
          varint.push(v);
          break;
        }
        varint.push((v % 128) | 0x80);
      }
      page.set([0x00, 0x01, 0x6b, 0x00, 0x00, 0x00, ...varint], PAGE_HEADER_BYTES);
      sealPage(page, PageType.leaf, 1, 1, 0);
      expect(() => decodePage(page, 1, 'i'), String(count)).toThrow(expect.objectContaining({ code: ErrorCodes.CORRUPT_INDEX, message: expect.stringMatching(/more than the page holds/) }));
    }
  });
});
