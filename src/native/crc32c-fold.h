/*
 * CRC32C folding kernels (crc32c-fold.c), for crc32c.c. Each takes the raw CRC state (no pre/post inversion) in
 * *state, checksums the longest prefix of p[0, n) that is a whole number of its groups (128 bytes for 256-bit
 * vectors, 256 for 512-bit ones), copying it to d in the same pass unless d is NULL, and returns that prefix's
 * length with *state advanced past it: 0 (and *state untouched) when n is shorter than one group. Call one only
 * where the CPU has it (crc32c.c checks).
 */
#ifndef SHARDKIT_CRC32C_FOLD_H
#define SHARDKIT_CRC32C_FOLD_H

#include <stddef.h>
#include <stdint.h>

/* GCC accepts the 256-bit carry-less multiply with AVX2 alone from 9.1 (GCC PR 88541); clang has it from 6 */
#if defined(__x86_64__) && ((defined(__clang__) && __clang_major__ >= 6) || (!defined(__clang__) && __GNUC__ >= 9))
#define SK_CRC_FOLD 1
void sk_crc_fold_init(void);
size_t sk_crc_fold256(uint32_t *state, const uint8_t *p, uint8_t *d, size_t n);
size_t sk_crc_fold512(uint32_t *state, const uint8_t *p, uint8_t *d, size_t n);
#endif

#endif
