/*
 * CRC32C (Castagnoli) as formats/checksum.ts computes it: crc(bytes, seed) continues from `seed`, the previous
 * result (0 to start). Call sk_crc32c_init() once before the others (any thread; it runs once per process).
 */
#ifndef SHARDKIT_CRC32C_H
#define SHARDKIT_CRC32C_H

#include <stddef.h>
#include <stdint.h>

void sk_crc32c_init(void);
/* 1 when sk_crc32c runs on the SSE4.2 crc32 instruction. */
int sk_crc32c_hardware(void);
uint32_t sk_crc32c(uint32_t seed, const uint8_t *p, size_t n);
/* The same through the portable table code, whatever the CPU (for tests). */
uint32_t sk_crc32c_portable(uint32_t seed, const uint8_t *p, size_t n);
/* memcpy(dst, src, n) returning sk_crc32c(seed, src, n), in one pass where the CPU allows. */
uint32_t sk_crc32c_copy(uint32_t seed, const uint8_t *src, uint8_t *dst, size_t n);

#endif
