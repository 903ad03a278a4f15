/*
 * CRC32C (Castagnoli) for the native addon, by the fastest kernel the CPU has: carry-less multiply folding of 512-bit
 * or 256-bit vectors (crc32c-fold.c) for the bulk of long inputs, the CPU's CRC32C instruction (SSE4.2 on x86-64,
 * the CRC extension on ARMv8) with three interleaved streams, or a slicing-by-8 table; all equal to
 * formats/checksum.ts crc32c (see crc32c.h).
 */
#include "crc32c.h"

#include "crc32c-fold.h"

#include <pthread.h>
#include <string.h>

#include "crc32c-hw.h"

#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#endif

/* ---------------------------------------------------------------------------------------------------------------
 * CRC32C. The internal state is the raw register (no pre/post inversion); crc32c(bytes, seed) = ~raw(~seed, bytes),
 * the convention of formats/checksum.ts (seed = previous result, 0 to start).
 */

#define CRC32C_POLY_REFLECTED 0x82F63B78u

/* Slicing-by-8 tables for the portable path; row 0 is the classic byte-at-a-time table. */
static uint32_t crc_table[8][256];

/*
 * Three-way interleaving: the CRC32C instruction has a latency of 3 cycles and a throughput of 1, so three
 * independent streams over three adjacent lanes run ~3x faster than one. The lane results are joined by shifting a
 * CRC state past LANE zero bytes, a linear map over GF(2) kept as four 256-entry tables (one per state byte).
 */
#define LONG_LANE_BYTES 4096
#define SHORT_LANE_BYTES 256

typedef struct {
  uint32_t byte[4][256];
} crc_shift_table;

static crc_shift_table shift_long;
static crc_shift_table shift_short;
/* The kernels, slowest first; `best_kernel` is the fastest this CPU and OS support (chosen once, in crc_init). */
enum { K_TABLE, K_INSN, K_FOLD256, K_FOLD512, K_COUNT };
#ifndef SK_HW_NAME
#define SK_HW_NAME "none"
#endif
static const char *const kernel_names[K_COUNT] = {"table", SK_HW_NAME, "vpclmulqdq-256", "vpclmulqdq-512"};
static int best_kernel = K_TABLE;
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static uint32_t crc_zero_bytes(uint32_t state, size_t zeros) {
  for (size_t i = 0; i < zeros; i++) state = crc_table[0][state & 0xff] ^ (state >> 8);
  return state;
}

static void make_shift_table(crc_shift_table *t, size_t zeros) {
  uint32_t basis[32];
  for (int bit = 0; bit < 32; bit++) basis[bit] = crc_zero_bytes(1u << bit, zeros);
  for (int k = 0; k < 4; k++) {
    for (int b = 0; b < 256; b++) {
      uint32_t v = 0;
      for (int j = 0; j < 8; j++) {
        if ((b >> j) & 1) v ^= basis[8 * k + j];
      }
      t->byte[k][b] = v;
    }
  }
}

#ifdef SK_HW_CRC
static inline uint32_t crc_shift(const crc_shift_table *t, uint32_t state) {
  return t->byte[0][state & 0xff] ^ t->byte[1][(state >> 8) & 0xff] ^ t->byte[2][(state >> 16) & 0xff] ^
         t->byte[3][state >> 24];
}
#endif

static void crc_init(void) {
  for (uint32_t n = 0; n < 256; n++) {
    uint32_t c = n;
    for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ CRC32C_POLY_REFLECTED : c >> 1;
    crc_table[0][n] = c;
  }
  for (uint32_t n = 0; n < 256; n++) {
    for (int k = 1; k < 8; k++) crc_table[k][n] = (crc_table[k - 1][n] >> 8) ^ crc_table[0][crc_table[k - 1][n] & 0xff];
  }
  make_shift_table(&shift_long, LONG_LANE_BYTES);
  make_shift_table(&shift_short, SHORT_LANE_BYTES);
#if defined(SK_HW_CRC) && defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("sse4.2")) best_kernel = K_INSN;
#elif defined(SK_HW_CRC) && defined(__APPLE__)
  best_kernel = K_INSN; /* every Apple ARM CPU has the CRC extension */
#elif defined(SK_HW_CRC) && defined(__linux__) && defined(HWCAP_CRC32)
  if (getauxval(AT_HWCAP) & HWCAP_CRC32) best_kernel = K_INSN;
#endif
#ifdef SK_CRC_FOLD
  sk_crc_fold_init();
  /* __builtin_cpu_supports also checks that the OS saves the vector registers (XCR0) */
  if (best_kernel == K_INSN && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("pclmul") &&
      __builtin_cpu_supports("vpclmulqdq")) {
    best_kernel = __builtin_cpu_supports("avx512f") ? K_FOLD512 : K_FOLD256;
  }
#endif
}

static uint32_t crc_raw_table(uint32_t state, const uint8_t *p, size_t n) {
  while (n > 0 && ((uintptr_t)p & 7) != 0) {
    state = crc_table[0][(state ^ *p++) & 0xff] ^ (state >> 8);
    n--;
  }
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  while (n >= 8) {
    uint64_t word;
    memcpy(&word, p, 8);
    uint32_t lo = (uint32_t)word ^ state;
    uint32_t hi = (uint32_t)(word >> 32);
    state = crc_table[7][lo & 0xff] ^ crc_table[6][(lo >> 8) & 0xff] ^ crc_table[5][(lo >> 16) & 0xff] ^
            crc_table[4][lo >> 24] ^ crc_table[3][hi & 0xff] ^ crc_table[2][(hi >> 8) & 0xff] ^
            crc_table[1][(hi >> 16) & 0xff] ^ crc_table[0][hi >> 24];
    p += 8;
    n -= 8;
  }
#endif
  while (n > 0) {
    state = crc_table[0][(state ^ *p++) & 0xff] ^ (state >> 8);
    n--;
  }
  return state;
}

#ifdef SK_HW_CRC
/*
 * The CRC32C instruction, optionally copying src to dst in the same pass (`copy` is a constant at every call site, so
 * the compiler emits two loops, one with stores and one without). In the copy, every word is loaded once, stored and
 * folded into the CRC from the register: a copy out of the page cache is bound by loads that miss the CPU caches,
 * so the checksum rides along almost free, where copy-then-checksum reads the bytes twice.
 */
#define SK_ALWAYS_INLINE SK_HW_TARGET __attribute__((always_inline)) static inline

SK_ALWAYS_INLINE uint64_t crc_lanes3(uint64_t state, const uint8_t *p, uint8_t *d, const int copy, size_t lane,
                                     const crc_shift_table *shift) {
  uint64_t a = state, b = 0, c = 0;
  const uint8_t *end = p + lane;
  while (p < end) {
    uint64_t wa, wb, wc;
    memcpy(&wa, p, 8);
    memcpy(&wb, p + lane, 8);
    memcpy(&wc, p + 2 * lane, 8);
    if (copy) {
      memcpy(d, &wa, 8);
      memcpy(d + lane, &wb, 8);
      memcpy(d + 2 * lane, &wc, 8);
      d += 8;
    }
    a = HW_CRC64(a, wa);
    b = HW_CRC64(b, wb);
    c = HW_CRC64(c, wc);
    p += 8;
  }
  uint32_t joined = crc_shift(shift, (uint32_t)a) ^ (uint32_t)b;
  return crc_shift(shift, joined) ^ (uint32_t)c;
}

SK_ALWAYS_INLINE uint32_t crc_hardware(uint32_t state32, const uint8_t *p, uint8_t *d, const int copy, size_t n) {
  uint64_t state = state32;
  while (n > 0 && ((uintptr_t)p & 7) != 0) {
    if (copy) *d++ = *p;
    state = HW_CRC8(state, *p++);
    n--;
  }
  while (n >= 3 * LONG_LANE_BYTES) {
    state = crc_lanes3(state, p, d, copy, LONG_LANE_BYTES, &shift_long);
    p += 3 * LONG_LANE_BYTES;
    if (copy) d += 3 * LONG_LANE_BYTES;
    n -= 3 * LONG_LANE_BYTES;
  }
  while (n >= 3 * SHORT_LANE_BYTES) {
    state = crc_lanes3(state, p, d, copy, SHORT_LANE_BYTES, &shift_short);
    p += 3 * SHORT_LANE_BYTES;
    if (copy) d += 3 * SHORT_LANE_BYTES;
    n -= 3 * SHORT_LANE_BYTES;
  }
  while (n >= 8) {
    uint64_t word;
    memcpy(&word, p, 8);
    if (copy) {
      memcpy(d, &word, 8);
      d += 8;
    }
    state = HW_CRC64(state, word);
    p += 8;
    n -= 8;
  }
  while (n > 0) {
    if (copy) *d++ = *p;
    state = HW_CRC8(state, *p++);
    n--;
  }
  return (uint32_t)state;
}

SK_HW_TARGET static uint32_t crc_raw_hardware(uint32_t state, const uint8_t *p, size_t n) {
  return crc_hardware(state, p, NULL, 0, n);
}

/* crc_raw_hardware for a short range: the word and byte loops alone (no lanes, no copy), for sk_crc32c_short. */
SK_HW_TARGET static uint32_t crc_short_hardware(uint64_t state, const uint8_t *p, size_t n) {
  while (n >= 8) {
    uint64_t word;
    memcpy(&word, p, 8);
    state = HW_CRC64(state, word);
    p += 8;
    n -= 8;
  }
  while (n > 0) {
    state = HW_CRC8(state, *p++);
    n--;
  }
  return (uint32_t)state;
}

SK_HW_TARGET static uint32_t crc_copy_raw_hardware(uint32_t state, const uint8_t *p, uint8_t *d, size_t n) {
  return crc_hardware(state, p, d, 1, n);
}
#endif

/* Bytes at the start of a copy whose cache lines are requested before the crc32 instruction's copy begins. */
#define PREFETCH_MAX_BYTES (16 * 1024)

/*
 * A copy by the crc32 instruction or the table (CPUs without the folding kernels) first requests every cache line of
 * its first PREFETCH_MAX_BYTES. A sample read at random from a mapped shard is in no CPU cache; the hardware
 * prefetcher needs a few misses to find the stream and stops at each 4 KiB page, and the crc32 loop's 8-byte loads
 * keep few lines in flight, so it waited on its lines a few at a time. With the prefetch, getSync of 1-10 KiB samples
 * took 0.92x the time, atSync 0.93x, the loader 0.88x (8-12 alternated processes, 20,000 samples in random order).
 * The folding kernels' 64-byte loads keep enough lines in flight: without the prefetch they took 0.84-1.02x the time
 * at 1-100 KiB and 0.97-0.98x at 1-10 KiB, so they go without, as do copies without a checksum (memcpy: 1.05-1.08x
 * the time with it, in C). A prefetch never faults.
 */
static inline void prefetch_lines(const uint8_t *p, size_t n) {
  const uint8_t *end = p + (n < PREFETCH_MAX_BYTES ? n : PREFETCH_MAX_BYTES);
  for (const uint8_t *line = (const uint8_t *)((uintptr_t)p & ~(uintptr_t)63); line < end; line += 64) {
    __builtin_prefetch(line, 0, 3);
  }
}

/* The raw CRC of p[0, n) from `state` by `kernel` (at most best_kernel), copying to d in the same pass unless NULL. */
static uint32_t crc_raw(int kernel, uint32_t state, const uint8_t *p, uint8_t *d, size_t n) {
#ifdef SK_CRC_FOLD
  if (kernel >= K_FOLD256) {
    size_t done = kernel == K_FOLD512 ? sk_crc_fold512(&state, p, d, n) : sk_crc_fold256(&state, p, d, n);
    p += done;
    n -= done;
    if (d != NULL) d += done;
  }
#endif
  if (d != NULL && kernel <= K_INSN) prefetch_lines(p, n);
#ifdef SK_HW_CRC
  if (kernel >= K_INSN) return d != NULL ? crc_copy_raw_hardware(state, p, d, n) : crc_raw_hardware(state, p, n);
#endif
  if (d != NULL && n > 0) memcpy(d, p, n);
  return crc_raw_table(state, p, n);
}

uint32_t sk_crc32c(uint32_t seed, const uint8_t *p, size_t n) { return ~crc_raw(best_kernel, ~seed, p, NULL, n); }

int sk_crc32c_has_insn(void) { return best_kernel >= K_INSN; }

uint32_t sk_crc32c_short(uint32_t seed, const uint8_t *p, size_t n) {
#ifdef SK_HW_CRC
  if (best_kernel >= K_INSN) return ~crc_short_hardware(~seed, p, n);
#endif
  return ~crc_raw_table(~seed, p, n);
}

uint32_t sk_crc32c_copy(uint32_t seed, const uint8_t *src, uint8_t *dst, size_t n) {
  return ~crc_raw(best_kernel, ~seed, src, dst, n);
}

int sk_crc32c_with(const char *kernel, uint32_t seed, const uint8_t *src, uint8_t *dst, size_t n, uint32_t *crc) {
  for (int k = 0; k <= best_kernel; k++) {
    if (strcmp(kernel, kernel_names[k]) == 0) {
      *crc = ~crc_raw(k, ~seed, src, dst, n);
      return 1;
    }
  }
  return 0;
}

const char *sk_crc32c_kernel(int k) { return k >= 0 && k <= best_kernel ? kernel_names[k] : NULL; }

void sk_crc32c_init(void) { pthread_once(&crc_once, crc_init); }
