/**
 * The native addon's CRC32C on ARMv8, where it runs on the CPU's CRC extension: src/native/crc32c.c cross-compiled
 * for aarch64 with test/native/crc32c-kernels.c and run under qemu-aarch64 (user mode, its CPU has the extension).
 * The CI machine is x86-64, so without this the ARMv8 kernel would never run before a user's does. .ci/run installs
 * the cross compiler and qemu; elsewhere the test is skipped when they are missing.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { hasTool, run } from '../helpers/tools.js';
import { tmpDir } from '../helpers/tmp.js';

const CC = 'aarch64-linux-gnu-gcc';
const QEMU = 'qemu-aarch64';
const native = fileURLToPath(new URL('../../src/native', import.meta.url));
const harness = fileURLToPath(new URL('../native/crc32c-kernels.c', import.meta.url));

describe.skipIf(!hasTool(CC) || !hasTool(QEMU, ['--version']))('CRC32C kernels on aarch64 (qemu)', () => {
  it('the ARMv8 CRC kernel is chosen and equals the table kernel, with and without the copy', () => {
    const exe = path.join(tmpDir(), 'crc32c-kernels');
    const sources = [harness, path.join(native, 'crc32c.c'), path.join(native, 'crc32c-fold.c')];
    // the addon's own warning flags, as an error: a kernel that compiles with warnings is not shipped
    run(CC, ['-O2', '-std=gnu11', '-Wall', '-Wextra', '-Werror', '-static', `-I${native}`, ...sources, '-o', exe, '-lpthread']);
    const out = run(QEMU, [exe]);
    expect(out).toMatch(/^kernel table\nkernel armv8-crc\n/);
    expect(out).toMatch(/\nok 20000\n$/);
  });
});
