import { SeededRandom } from './seeded-random.js';

/**
 * The small and large non-image members of synthetic samples: class labels, token ids, JSON metadata and 1 MiB
 * float16 arrays. Each is a pure function of its inputs, so `synth` output is the same on every run.
 */

/** The class label as WebDataset's `.cls` convention stores it: the class index in decimal, newline-terminated. */
export function classLabel(classIndex: number): Uint8Array {
  return Buffer.from(`${classIndex}\n`);
}

/** Largest `.txt` token-id file; `tiny` promises sub-100-byte files. */
export const TOKENS_MAX_BYTES = 96;

/** Space-separated token ids (a BERT-style [CLS] ... [SEP] sequence), between 16 and {@link TOKENS_MAX_BYTES} bytes. */
export function tokenIds(random: SeededRandom): Uint8Array {
  const targetLength = 16 + random.int(TOKENS_MAX_BYTES - 16);
  let text = '101';
  for (;;) {
    const next = ` ${1000 + random.int(29000)}`;
    if (text.length + next.length + ' 102\n'.length > targetLength) break;
    text += next;
  }
  return Buffer.from(`${text} 102\n`);
}

/** Per-sample metadata such as scrapers and labelling tools write next to an image (well under 100 bytes). */
export function sampleMetadata(sampleIndex: number, classIndex: number, wnid: string, random: SeededRandom): Uint8Array {
  const meta = { id: sampleIndex, label: classIndex, wnid, score: Math.round(random.float() * 1000) / 1000 };
  return Buffer.from(`${JSON.stringify(meta)}\n`);
}

/** Size of the large member of `mixed` samples: a 512x1024 float16 array (feature map, depth map), ~1 MiB. */
export const LARGE_ARRAY_SHAPE = [512, 1024] as const;
const FLOAT16_BYTES = 2;
const NPY_MAGIC = Buffer.from([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 0x01, 0x00]); // "\x93NUMPY" v1.0
const NPY_HEADER_ALIGN = 64;

/**
 * A NumPy `.npy` (format 1.0) float16 array of noise-like values: realistic bytes that compress poorly, as real
 * feature maps do. `numpy.load` reads it.
 */
export function largeArray(random: SeededRandom): Uint8Array {
  const [rows, cols] = LARGE_ARRAY_SHAPE;
  let header = `{'descr': '<f2', 'fortran_order': False, 'shape': (${rows}, ${cols}), }`;
  // The header, newline included, pads with spaces so the data starts on a 64-byte boundary (format spec).
  const unpadded = NPY_MAGIC.length + 2 + header.length + 1;
  header += ' '.repeat((NPY_HEADER_ALIGN - (unpadded % NPY_HEADER_ALIGN)) % NPY_HEADER_ALIGN) + '\n';
  const dataBytes = rows * cols * FLOAT16_BYTES;
  const out = Buffer.alloc(NPY_MAGIC.length + 2 + header.length + dataBytes);
  NPY_MAGIC.copy(out, 0);
  out.writeUInt16LE(header.length, NPY_MAGIC.length);
  out.write(header, NPY_MAGIC.length + 2, 'latin1');
  // DataView with explicit little-endian writes: the same bytes on every platform, as '<f2' promises.
  const data = new DataView(out.buffer, out.byteOffset + out.length - dataBytes, dataBytes);
  for (let i = 0; i < dataBytes; i += 4) {
    // Two float16s per word, each with a sign, exponent 14..15 (|x| in [0.5, 2)) and random mantissa: finite values.
    const bits = random.nextUint32();
    const lo = (bits & 0x83ff) | 0x3800 | ((bits >>> 10) & 1) << 10;
    const hi = ((bits >>> 16) & 0x83ff) | 0x3800 | ((bits >>> 26) & 1) << 10;
    data.setUint32(i, (lo | (hi << 16)) >>> 0, true);
  }
  return out;
}
