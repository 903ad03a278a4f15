/*
 * The CRC32C instruction (SSE4.2 on x86-64, the CRC extension on ARMv8), for crc32c.c and for loops that checksum
 * many short ranges inline (verify-scan.c): SK_HW_CRC is defined where the compiler can emit it, and functions that use
 * HW_CRC8 / HW_CRC64 carry SK_HW_TARGET and run only when sk_crc32c_has_insn() says the CPU has it.
 */
#ifndef SHARDKIT_CRC32C_HW_H
#define SHARDKIT_CRC32C_HW_H

#include <stdint.h>

/* The CRC32C instruction: 8 bytes or 1 byte into a 32-bit state kept in a 64-bit variable. */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <nmmintrin.h>
#define SK_HW_CRC 1
#define SK_HW_NAME "sse4.2"
#define SK_HW_TARGET __attribute__((target("sse4.2")))
#define HW_CRC8(s, byte) _mm_crc32_u8((uint32_t)(s), (byte))
#define HW_CRC64(s, word) _mm_crc32_u64((s), (word))
#elif defined(__aarch64__) && (defined(__clang__) || __GNUC__ >= 9)
/* the compilers' own builtins: arm_acle.h declares its CRC intrinsics only under -march=...+crc in some versions */
#define SK_HW_CRC 1
#define SK_HW_NAME "armv8-crc"
#ifdef __clang__
#define SK_HW_TARGET __attribute__((target("crc")))
#define HW_CRC8(s, byte) __builtin_arm_crc32cb((uint32_t)(s), (byte))
#define HW_CRC64(s, word) __builtin_arm_crc32cd((uint32_t)(s), (word))
#else
#define SK_HW_TARGET __attribute__((target("+crc")))
#define HW_CRC8(s, byte) __builtin_aarch64_crc32cb((uint32_t)(s), (byte))
#define HW_CRC64(s, word) __builtin_aarch64_crc32cx((uint32_t)(s), (word))
#endif
#endif

#endif
