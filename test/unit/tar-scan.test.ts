/** The tar push parser: same entries whatever the chunking, pax and GNU long names, base-256 sizes, bounded metadata. */
import fc from 'fast-check';
import tarStream from 'tar-stream';
import { describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../formats/errors.js';
import { encodeFileHeader, F_SIZE, headerChecksum, TAR_BLOCK, tarPadding } from '../../formats/tar-header.js';
import { MAX_TAR_META_BYTES, TarScanner, type TarEntry } from '../../formats/tar-scan.js';
import { flipBits } from '../helpers/checked.js';
import { bufferChunk } from '../helpers/stream-chunks.js';
import { hasTool, run } from '../helpers/tools.js';

interface Seen {
  name: string | undefined;
  type: string;
  size: number;
  dataOffset: number;
  data: string;
}

function scan(bytes: Uint8Array, cuts: number[] = []): Seen[] {
  const out: Seen[] = [];
  let current: Seen | undefined;
  const s = new TarScanner('t.tar', {
    onEntry: (e: TarEntry) => {
      current = { name: e.name, type: e.type, size: e.size, dataOffset: e.dataOffset, data: '' };
      out.push(current);
    },
    onData: (_e, piece) => {
      current!.data += Buffer.from(piece).toString('latin1');
    },
  });
  let pos = 0;
  for (const c of [...cuts.filter((x) => x > 0 && x < bytes.length)].sort((a, b) => a - b)) {
    s.push(bytes.subarray(pos, c));
    pos = c;
  }
  s.push(bytes.subarray(pos));
  s.finish();
  return out;
}

function ourTar(files: [string, string][]): Uint8Array {
  const parts: Uint8Array[] = [];
  for (const [name, body] of files) {
    parts.push(encodeFileHeader(name, body.length), Buffer.from(body, 'latin1'), new Uint8Array(tarPadding(body.length)));
  }
  parts.push(new Uint8Array(1024));
  return Buffer.concat(parts);
}

async function tarStreamBytes(entries: { name: string; body: string; type?: 'file' | 'symlink' | 'directory'; linkname?: string }[]): Promise<Uint8Array> {
  const pack = tarStream.pack();
  const chunks: Buffer[] = [];
  pack.on('data', (c) => chunks.push(bufferChunk(c)));
  for (const e of entries) {
    const header = { name: e.name, type: e.type ?? 'file', ...(e.linkname ? { linkname: e.linkname } : {}) };
    if (e.type === undefined) pack.entry(header, Buffer.from(e.body, 'latin1'));
    else pack.entry(header);
  }
  pack.finalize();
  await new Promise<void>((r) => pack.on('end', () => r()));
  return Buffer.concat(chunks);
}

describe('TarScanner', () => {
  it('reports the same entries and data whatever the chunk boundaries', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.stringMatching(/^[a-z]{1,8}(\/[a-z]{1,8}){0,3}\.[a-z]{1,4}$/), fc.string({ maxLength: 1500 }).map((s) => Buffer.from(s).toString('latin1'))), { minLength: 1, maxLength: 6 }),
        fc.array(fc.nat(20000), { maxLength: 12 }),
        (files, cuts) => {
          const bytes = ourTar(files);
          const whole = scan(bytes);
          expect(whole.map((e) => [e.name, e.data])).toEqual(files);
          expect(scan(bytes, cuts)).toEqual(whole);
        },
      ),
      { numRuns: 150 },
    );
  });

  it('applies pax path and GNU long names, and gives links no data', async () => {
    const long = `${'d'.repeat(120)}/${'f'.repeat(120)}.txt`;
    const bytes = await tarStreamBytes([
      { name: long, body: 'long' },
      { name: 'l.jpg', body: '', type: 'symlink', linkname: '../../etc/passwd' },
      { name: 'd', body: '', type: 'directory' },
    ]);
    const seen = scan(bytes);
    expect(seen.map((e) => [e.name, e.type, e.data])).toEqual([[long, '0', 'long'], ['l.jpg', '2', ''], ['d', '5', '']]);
  });

  it('reads base-256 sizes', () => {
    const header = encodeFileHeader('a.bin', 0);
    header.fill(0, F_SIZE[0], F_SIZE[0] + F_SIZE[1]);
    header[F_SIZE[0]] = 0x80;
    header[F_SIZE[0] + F_SIZE[1] - 1] = 5;
    header.fill(0x20, 148, 156);
    Buffer.from(header.buffer, header.byteOffset).write(`${headerChecksum(header).toString(8).padStart(6, '0')}\0 `, 148, 'latin1');
    const bytes = Buffer.concat([header, Buffer.from('hello'), Buffer.alloc(TAR_BLOCK - 5), Buffer.alloc(1024)]);
    expect(scan(bytes).map((e) => [e.name, e.size, e.data])).toEqual([['a.bin', 5, 'hello']]);
  });

  it.runIf(hasTool('python3'))("sees the members Python's tarfile (WebDataset's reader) sees in tars where GNU tar differs", () => {
    // a header with its fields rewritten, and its checksum made right again
    const header = (name: string, size: number, edit: (h: Uint8Array) => void = () => {}): Uint8Array => {
      const h = encodeFileHeader(name, size);
      edit(h);
      h.fill(0x20, 148, 156);
      Buffer.from(h.buffer, h.byteOffset).write(`${headerChecksum(h).toString(8).padStart(6, '0')}\0 `, 148, 'latin1');
      return h;
    };
    const NUL_SIZE_FIELD = '\x00\x00' + '0000001000';
    expect([NUL_SIZE_FIELD.length, parseInt(NUL_SIZE_FIELD.replaceAll('\x00', ''), 8)]).toEqual([F_SIZE[1], 512]);
    const body = (text: string): Uint8Array => Buffer.concat([Buffer.from(text), Buffer.alloc(tarPadding(text.length))]);
    const nested = Buffer.concat([header('evil.txt', 5), body('evil!')]);
    const tars = {
      // a v7 directory (type NUL, name ending in /) with a size: tarfile reads no data after it, GNU tar skips 512
      v7dir: Buffer.concat([header('dir/', 512, (h) => (h[156] = 0)), header('inner.bin', 1024), nested, Buffer.alloc(1024)]),
      // a size field behind two NULs: tarfile reads 0, an old shardkit read 512 (octal 1000; the 12 bytes fill the field)
      nulSize: Buffer.concat([header('a.txt', 0, (h) => Buffer.from(h.buffer, h.byteOffset).write(NUL_SIZE_FIELD, F_SIZE[0], 'latin1')), header('inner.bin', 1024), nested, Buffer.alloc(1024)]),
    };
    const script = [
      'import sys, json, tarfile, io',
      'out = {}',
      'for name, h in json.load(sys.stdin).items():',
      '    with tarfile.open(fileobj=io.BytesIO(bytes.fromhex(h))) as t:',
      '        out[name] = [[m.name, m.size if m.isreg() else 0, m.offset_data] for m in t.getmembers()]',
      'print(json.dumps(out))',
    ].join('\n');
    const want = JSON.parse(run('python3', ['-c', script], { input: JSON.stringify(Object.fromEntries(Object.entries(tars).map(([k, v]) => [k, Buffer.from(v).toString('hex')]))) }));
    for (const [name, bytes] of Object.entries(tars)) {
      const seen = scan(bytes).map((e) => [e.name?.replace(/\/$/, ''), e.size, e.dataOffset]);
      expect(seen, name).toEqual(want[name]);
    }
  });

  it('refuses oversized pax data, a damaged header and an archive cut inside an entry', () => {
    const pax = encodeFileHeader('x'.repeat(200), 3); // pax header first
    const huge = Buffer.from(pax.subarray(0, TAR_BLOCK));
    huge.write((MAX_TAR_META_BYTES + 1).toString(8).padStart(11, '0'), F_SIZE[0], 'latin1');
    huge.fill(0x20, 148, 156);
    huge.write(`${headerChecksum(huge).toString(8).padStart(6, '0')}\0 `, 148, 'latin1');
    expect(() => scan(huge)).toThrow(expect.objectContaining({ code: ErrorCodes.CORRUPT_SHARD }));
    const ok = ourTar([['a.txt', 'abc']]);
    const bad = Buffer.from(ok);
    flipBits(bad, 3, 1);
    expect(() => scan(bad)).toThrow(expect.objectContaining({ code: ErrorCodes.CORRUPT_SHARD }));
    expect(() => scan(ok.subarray(0, 600))).toThrow(expect.objectContaining({ code: ErrorCodes.TRUNCATED }));
    expect(scan(ok.subarray(0, 1024))).toHaveLength(1); // no end blocks: accepted, as tarfile does
  });
});
