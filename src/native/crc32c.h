/*
 * CRC32C (Castagnoli) as formats/checksum.ts computes it: crc(bytes, seed) continues from `seed`, the previous
 * result (0 to start). Call sk_crc32c_init() once before the others (any thread; it runs once per process).
 */
#ifndef SHARDKIT_CRC32C_H
#define SHARDKIT_CRC32C_H

#include <stddef.h>
#include <stdint.h>

void sk_crc32c_init(void);
uint32_t sk_crc32c(uint32_t seed, const uint8_t *p, size_t n);
/*
 * The same for short ranges (the members of tiny samples): the crc32 instruction (or the table) alone, without the
 * folding kernels' dispatch, which costs more than the checksum below 64 bytes or so. Any length is right.
 */
uint32_t sk_crc32c_short(uint32_t seed, const uint8_t *p, size_t n);
/* 1 when sk_crc32c_short uses the CRC32C instruction (crc32c-hw.h's functions may then run), else 0. */
int sk_crc32c_has_insn(void);
/* memcpy(dst, src, n) returning sk_crc32c(seed, src, n), in one pass where the CPU allows. */
uint32_t sk_crc32c_copy(uint32_t seed, const uint8_t *src, uint8_t *dst, size_t n);
/*
 * For tests: the name of kernel k, slowest first ("table", "sse4.2" or "armv8-crc", "vpclmulqdq-256",
 * "vpclmulqdq-512"), or NULL past the fastest this CPU supports (which sk_crc32c uses); and the CRC by the kernel of
 * that name, copying src to dst in the same pass unless dst is NULL. Returns 0 for a kernel this CPU lacks.
 */
const char *sk_crc32c_kernel(int k);
int sk_crc32c_with(const char *kernel, uint32_t seed, const uint8_t *src, uint8_t *dst, size_t n, uint32_t *crc);

#endif
