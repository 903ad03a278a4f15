/*
 * verify's member check of tiny samples, in C: ShardCheck.takeLones (src/verify/lone-run.ts holds the same loop in
 * JavaScript, the fallback and the reference: test/property/native-verify.test.ts compares them).
 *
 *   verifyTakeLones(chunk, records, io)
 *       from record io[FROM], the run of records of shard io[SHARD] that are one member stored as is, inside the
 *       chunk (shard bytes [io[POS], io[POS] + chunk.length)), in offset order after io[PREV_END] and io[LAST], and
 *       whose CRC32C matches; io gets the first record not taken, the new PREV_END and LAST, and the bytes taken.
 *
 * It takes the chunk and the records as hostile (see verify-scan.c): anything unusual returns "not taken".
 */
#include <stdint.h>
#include <string.h>

#include "crc32c.h"
#include "crc32c-hw.h"
#include "verify-records.h"

/* Spans up to this long are checksummed by sk_crc32c_short (the folding kernels pay off on longer ones). */
#define SHORT_CRC_BYTES 256

/*
 * ShardCheck.takeLones over io (see the top of this file): the index of the first record not taken. CRC(p, n) is the
 * CRC32C of a span; take_lones_insn checksums short spans with the CRC32C instruction inline (a call per 8-byte span
 * cost more than the checksum). A record is taken when, as in lone-run.ts, it is of the shard, one member stored as
 * is (crc >= 0), not empty, after the span before (prev_end), the last sample fed (last) and the chunk's start
 * (pos), and ends inside the chunk. After a record is taken the three lower bounds are its end, so they are kept
 * as one: `lower`.
 */
#define TAKE_LONES_BODY(CRC)                                                                                           \
  double shard = io[IO_SHARD], pos = io[IO_POS], prev_end = io[IO_PREV_END], last = io[IO_LAST];                       \
  double chunk_d = (double)(int64_t)chunk_len, end = pos + chunk_d, bytes = 0;                                         \
  /* written so that a NaN anywhere stops the run: a NaN lower or end fails every comparison below */                \
  double lower = prev_end;                                                                                             \
  if (pos > lower) lower = pos;                                                                                        \
  if (last > lower) lower = last;                                                                                      \
  if (pos != pos || last != last) lower = pos + last;                                                                  \
  uint32_t i = from;                                                                                                   \
  for (; i < count; i++) {                                                                                             \
    double off = offsets[i], len = lengths[i], crc = lone_crc[i];                                                      \
    if (!(shards[i] == shard && crc >= 0 && len > 0 && off >= lower && off + len <= end)) break;                       \
    double start_d = off - pos;                                                                                        \
    if (!(start_d <= chunk_d && len <= chunk_d)) break;                                                                \
    /* both in [0, chunk.length]: signed conversions, exact; a fraction is refused */                                 \
    int64_t start = (int64_t)start_d, n = (int64_t)len;                                                                \
    if ((double)start != start_d || (double)n != len || n > (int64_t)chunk_len - start) break;                        \
    if ((double)CRC(chunk + start, (size_t)n) != crc) break;                                                           \
    lower = off + len;                                                                                                 \
    prev_end = lower;                                                                                                  \
    last = off;                                                                                                        \
    bytes += len;                                                                                                      \
  }                                                                                                                    \
  io[IO_PREV_END] = prev_end;                                                                                          \
  io[IO_LAST] = last;                                                                                                  \
  io[IO_BYTES] = bytes;                                                                                                \
  return i;

#define TAKE_LONES_PARAMS                                                                                              \
  const uint8_t *restrict chunk, size_t chunk_len, const double *restrict shards, const double *restrict offsets,      \
      const double *restrict lengths, const double *restrict lone_crc, uint32_t from, uint32_t count, double *restrict io

static inline uint32_t span_crc(const uint8_t *p, size_t n) { return n <= SHORT_CRC_BYTES ? sk_crc32c_short(0, p, n) : sk_crc32c(0, p, n); }

static uint32_t take_lones(TAKE_LONES_PARAMS) { TAKE_LONES_BODY(span_crc) }

#ifdef SK_HW_CRC
/* CRC32C of a short span by the instruction, inline (SK_HW_TARGET callers only); longer spans by sk_crc32c. */
SK_HW_TARGET static inline uint32_t span_crc_insn(const uint8_t *p, size_t n) {
  if (n > SHORT_CRC_BYTES) return sk_crc32c(0, p, n);
  uint64_t state = 0xffffffffu;
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t word;
    memcpy(&word, p, 8);
    state = HW_CRC64(state, word);
  }
  for (; n > 0; n--) state = HW_CRC8(state, *p++);
  return ~(uint32_t)state;
}

SK_HW_TARGET static uint32_t take_lones_insn(TAKE_LONES_PARAMS) { TAKE_LONES_BODY(span_crc_insn) }
#endif

#define TAKE_ARGS 3

/* verifyTakeLones(chunk, records, io) */
napi_value sk_verify_take_lones(napi_env env, napi_callback_info info) {
  napi_value argv[TAKE_ARGS];
  size_t argc = TAKE_ARGS;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < TAKE_ARGS) return throw_arg(env, "shardkit native: verifyTakeLones needs 3 arguments");
  uint8_t *chunk;
  size_t chunk_len, records_len, io_len;
  double *records, *io;
  if (!typed(env, argv[0], napi_uint8_array, (void **)&chunk, &chunk_len)) return throw_arg(env, "shardkit native: verifyTakeLones needs a chunk (Uint8Array)");
  if (!typed(env, argv[1], napi_float64_array, (void **)&records, &records_len)) return throw_arg(env, "shardkit native: verifyTakeLones needs a Float64Array for the records");
  if (!typed(env, argv[2], napi_float64_array, (void **)&io, &io_len) || io_len < TAKE_IO_COUNT) return throw_arg(env, "shardkit native: verifyTakeLones needs a Float64Array io");
  double from_d = io[IO_FROM], count_d = io[IO_COUNT];
  size_t capacity = records_len / RECORD_ARRAYS;
  if (!(from_d >= 0 && count_d >= from_d && count_d <= (double)capacity) || (double)(uint32_t)from_d != from_d || (double)(uint32_t)count_d != count_d) {
    return throw_arg(env, "shardkit native: verifyTakeLones: records [from, count) outside the arrays");
  }
  const double *shards = records + RECORD_SHARD * capacity, *offsets = records + RECORD_OFFSET * capacity;
  const double *lengths = records + RECORD_LENGTH * capacity, *lone_crc = records + RECORD_LONE_CRC * capacity;
  uint32_t from = (uint32_t)from_d, count = (uint32_t)count_d;
#ifdef SK_HW_CRC
  if (sk_crc32c_has_insn()) {
    io[IO_NEXT] = take_lones_insn(chunk, chunk_len, shards, offsets, lengths, lone_crc, from, count, io);
    return NULL;
  }
#endif
  io[IO_NEXT] = take_lones(chunk, chunk_len, shards, offsets, lengths, lone_crc, from, count, io);
  return NULL;
}
