/**
 * NumPy `.npy` files, format version 1.0, for float32 tensors (what `normalize=mean:std` stores).
 *
 * Layout (numpy/lib/format.py, "Format Version 1.0"):
 * | bytes        | field                                                                           |
 * |--------------|---------------------------------------------------------------------------------|
 * | 0..5         | magic `\x93NUMPY`                                                               |
 * | 6, 7         | format version major 1, minor 0                                                 |
 * | 8..9         | header length HLEN, uint16 little-endian                                        |
 * | 10..10+HLEN  | ASCII Python dict literal `{'descr': '<f4', 'fortran_order': False, 'shape': (C, H, W), }`, |
 * |              | padded with spaces and ended by `\n` so that 10 + HLEN is a multiple of 64     |
 * | 10+HLEN..    | the data, C order, float32 little-endian                                        |
 *
 * The encoder writes exactly what `numpy.save` (numpy 2.x) writes, including its spare spaces after the dict
 * that let numpy grow the first axis in place, so files compare byte for byte with numpy's.
 */
import { ErrorCodes, ShardkitError } from '../../formats/errors.js';

const NPY_MAGIC = Uint8Array.of(0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59); // \x93NUMPY
const NPY_VERSION_1_0 = Uint8Array.of(1, 0);
/** Magic (6) + version (2) + header length (2). */
const NPY_PREAMBLE_BYTES = 10;
/** numpy aligns the data to 64 bytes so that any dtype can be memory-mapped. */
const NPY_ARRAY_ALIGN = 64;
/** numpy leaves room for the first axis to grow to this many digits without rewriting the header. */
const NPY_GROWTH_AXIS_MAX_DIGITS = 21;
/** Version 1.0 stores the header length in a uint16. */
const NPY_V1_MAX_HEADER = 0xffff;
const FLOAT32_BYTES = 4;

export interface Float32Tensor {
  /** Dimensions, outermost first (C order). */
  shape: readonly number[];
  data: Float32Array;
}

/** Python's repr of a tuple of ints: `()`, `(5,)`, `(3, 2, 2)`. */
function pythonShape(shape: readonly number[]): string {
  if (shape.length === 1) return `(${shape[0]},)`;
  return `(${shape.join(', ')})`;
}

/** The header after the preamble: the dict, numpy's spare spaces and padding, and `\n`. */
function headerText(shape: readonly number[]): string {
  let dict = `{'descr': '<f4', 'fortran_order': False, 'shape': ${pythonShape(shape)}, }`;
  if (shape.length > 0) dict += ' '.repeat(NPY_GROWTH_AXIS_MAX_DIGITS - String(shape[0]).length);
  const withNewline = dict.length + 1;
  // numpy's rule, kept exactly (a full 64 bytes of padding when already aligned).
  const padding = NPY_ARRAY_ALIGN - ((NPY_PREAMBLE_BYTES + withNewline) % NPY_ARRAY_ALIGN);
  return `${dict}${' '.repeat(padding)}\n`;
}

/** The size of the `.npy` file {@link encodeNpy} makes for a float32 tensor of `shape`, without making it. */
export function npyFileBytes(shape: readonly number[]): number {
  return NPY_PREAMBLE_BYTES + headerText(shape).length + shape.reduce((a, b) => a * b, 1) * FLOAT32_BYTES;
}

/**
 * Encodes a float32 tensor as a `.npy` file (v1.0, `<f4`, C order), byte-identical to `numpy.save`.
 * @throws ShardkitError INVALID_ARG when the shape is not non-negative integers or does not match the data length.
 */
export function encodeNpy(tensor: Float32Tensor): Uint8Array {
  const { shape, data } = tensor;
  let count = 1;
  for (const dim of shape) {
    if (!Number.isSafeInteger(dim) || dim < 0) {
      throw new ShardkitError(ErrorCodes.INVALID_ARG, `Expected non-negative integer dimensions for the .npy shape but received [${shape.join(', ')}]`);
    }
    count *= dim;
  }
  if (count !== data.length) {
    throw new ShardkitError(ErrorCodes.INVALID_ARG, `The .npy shape [${shape.join(', ')}] holds ${count} values but the data has ${data.length}`);
  }
  const header = headerText(shape);
  const headerLength = header.length;
  if (headerLength > NPY_V1_MAX_HEADER) {
    throw new ShardkitError(ErrorCodes.TOO_LARGE, `The .npy header for shape [${shape.join(', ')}] does not fit format version 1.0`);
  }
  const dataOffset = NPY_PREAMBLE_BYTES + headerLength;
  const out = new Uint8Array(dataOffset + count * FLOAT32_BYTES);
  out.set(NPY_MAGIC, 0);
  out.set(NPY_VERSION_1_0, NPY_MAGIC.length);
  const view = new DataView(out.buffer);
  view.setUint16(NPY_MAGIC.length + NPY_VERSION_1_0.length, headerLength, true);
  for (let i = 0; i < header.length; i++) out[NPY_PREAMBLE_BYTES + i] = header.charCodeAt(i);
  // DataView writes little-endian whatever the host's byte order.
  for (let i = 0; i < count; i++) view.setFloat32(dataOffset + i * FLOAT32_BYTES, data[i] as number, true);
  return out;
}

const HEADER_PATTERN =
  /^\{\s*'descr'\s*:\s*'([<>|=]?\w+)'\s*,\s*'fortran_order'\s*:\s*(True|False)\s*,\s*'shape'\s*:\s*\(([\d\s,]*)\)\s*,?\s*\}\s*$/;

/**
 * Decodes a `.npy` file holding a little-endian float32 array in C order (what {@link encodeNpy} and
 * `numpy.save(np.float32 array)` write). Other dtypes, Fortran order and versions other than 1.0 are rejected.
 * @param name the member or file name for error messages.
 * @throws ShardkitError INPUT when the bytes are not such a file.
 */
export function decodeNpy(bytes: Uint8Array, name = '.npy member'): Float32Tensor {
  const fail = (why: string): never => {
    throw new ShardkitError(ErrorCodes.INPUT, `${name} is not a float32 .npy v1.0 file: ${why}`);
  };
  if (bytes.length < NPY_PREAMBLE_BYTES || !NPY_MAGIC.every((b, i) => bytes[i] === b)) fail('bad magic');
  if (bytes[6] !== 1 || bytes[7] !== 0) fail(`unsupported version ${bytes[6]}.${bytes[7]}`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const headerLength = view.getUint16(8, true);
  const dataOffset = NPY_PREAMBLE_BYTES + headerLength;
  if (bytes.length < dataOffset) fail('truncated header');
  const header = new TextDecoder('latin1').decode(bytes.subarray(NPY_PREAMBLE_BYTES, dataOffset));
  const match = HEADER_PATTERN.exec(header);
  if (match === null) return fail(`unreadable header ${JSON.stringify(header.trim())}`);
  if (match[1] !== '<f4') fail(`dtype ${match[1]} is not <f4`);
  if (match[2] !== 'False') fail('Fortran order is not supported');
  const shape = (match[3] ?? '').split(',').map((s) => s.trim()).filter((s) => s !== '').map(Number);
  const count = shape.reduce((a, b) => a * b, 1);
  if (bytes.length !== dataOffset + count * FLOAT32_BYTES) {
    fail(`expected ${count * FLOAT32_BYTES} data bytes for shape (${shape.join(', ')}) but found ${bytes.length - dataOffset}`);
  }
  const data = new Float32Array(count);
  for (let i = 0; i < count; i++) data[i] = view.getFloat32(dataOffset + i * FLOAT32_BYTES, true);
  return { shape, data };
}
