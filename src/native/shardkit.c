/*
 * shardkit's optional native addon: what the local synchronous read path needs and Node does not have.
 *
 *   map(fd, length[, randomAccess])   read-only MAP_SHARED mapping of a whole file -> opaque handle
 *   unmap(handle)                     munmap now (idempotent); later copies throw instead of touching freed memory
 *   copy(handle, offset, length, target, targetOffset[, crcStart, crcLength])
 *                                     copies mapped bytes into a JS-owned Uint8Array (bounds-checked here), and
 *                                     returns the CRC32C of a sub-range of the copy when asked
 *   crc32c(bytes[, seed])             CRC32C (Castagnoli), equal to formats/checksum.ts crc32c
 *   crc32cPortable(bytes[, seed])     the same through the table fallback (for tests on SSE4.2 machines)
 *   hardwareCrc32c                    true when crc32c runs on SSE4.2
 *   readFile(path, target, offset, room)
 *                                     pack's source read in one call (read-file.c)
 *
 * Mapped memory is never handed to JS: a view that outlived munmap would crash the process. Reading a page past
 * the end of a file that shrank after it was mapped raises SIGBUS; copy() catches it (a SIGBUS handler jumps back
 * into the copy that faulted) and throws an Error with code ERR_SHARDKIT_NATIVE_TRUNCATED instead.
 *
 * Error codes thrown here (the JS side turns them into ShardkitErrors):
 *   ERR_SHARDKIT_NATIVE_ARG        a bad argument (a bug in the caller: the JS side validates first)
 *   ERR_SHARDKIT_NATIVE_CLOSED     the handle was unmapped
 *   ERR_SHARDKIT_NATIVE_RANGE      offset + length beyond the mapped length
 *   ERR_SHARDKIT_NATIVE_TRUNCATED  the file ended inside the range (SIGBUS)
 *   ERR_SHARDKIT_NATIVE_MAP        mmap(2) failed (the message holds strerror)
 */
#define NAPI_VERSION 8
#include <node_api.h>

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <nmmintrin.h>
#define SK_X86_CRC 1
#endif

/* ---------------------------------------------------------------------------------------------------------------
 * CRC32C. The internal state is the raw register (no pre/post inversion); crc32c(bytes, seed) = ~raw(~seed, bytes),
 * the convention of formats/checksum.ts (seed = previous result, 0 to start).
 */

#define CRC32C_POLY_REFLECTED 0x82F63B78u

/* Slicing-by-8 tables for the portable path; row 0 is the classic byte-at-a-time table. */
static uint32_t crc_table[8][256];

/*
 * Three-way interleaving: the SSE4.2 crc32 instruction has a latency of 3 cycles and a throughput of 1, so three
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
static int use_hardware_crc;
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

static inline uint32_t crc_shift(const crc_shift_table *t, uint32_t state) {
  return t->byte[0][state & 0xff] ^ t->byte[1][(state >> 8) & 0xff] ^ t->byte[2][(state >> 16) & 0xff] ^
         t->byte[3][state >> 24];
}

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
#ifdef SK_X86_CRC
  __builtin_cpu_init();
  use_hardware_crc = __builtin_cpu_supports("sse4.2") ? 1 : 0;
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

#ifdef SK_X86_CRC
__attribute__((target("sse4.2"))) static inline uint64_t crc_lanes3(uint64_t state, const uint8_t *p, size_t lane,
                                                                    const crc_shift_table *shift) {
  uint64_t a = state, b = 0, c = 0;
  const uint8_t *end = p + lane;
  while (p < end) {
    uint64_t wa, wb, wc;
    memcpy(&wa, p, 8);
    memcpy(&wb, p + lane, 8);
    memcpy(&wc, p + 2 * lane, 8);
    a = _mm_crc32_u64(a, wa);
    b = _mm_crc32_u64(b, wb);
    c = _mm_crc32_u64(c, wc);
    p += 8;
  }
  uint32_t joined = crc_shift(shift, (uint32_t)a) ^ (uint32_t)b;
  return crc_shift(shift, joined) ^ (uint32_t)c;
}

__attribute__((target("sse4.2"))) static uint32_t crc_raw_hardware(uint32_t state32, const uint8_t *p, size_t n) {
  uint64_t state = state32;
  while (n > 0 && ((uintptr_t)p & 7) != 0) {
    state = _mm_crc32_u8((uint32_t)state, *p++);
    n--;
  }
  while (n >= 3 * LONG_LANE_BYTES) {
    state = crc_lanes3(state, p, LONG_LANE_BYTES, &shift_long);
    p += 3 * LONG_LANE_BYTES;
    n -= 3 * LONG_LANE_BYTES;
  }
  while (n >= 3 * SHORT_LANE_BYTES) {
    state = crc_lanes3(state, p, SHORT_LANE_BYTES, &shift_short);
    p += 3 * SHORT_LANE_BYTES;
    n -= 3 * SHORT_LANE_BYTES;
  }
  while (n >= 8) {
    uint64_t word;
    memcpy(&word, p, 8);
    state = _mm_crc32_u64(state, word);
    p += 8;
    n -= 8;
  }
  while (n > 0) {
    state = _mm_crc32_u8((uint32_t)state, *p++);
    n--;
  }
  return (uint32_t)state;
}
#endif

static uint32_t crc32c_update(uint32_t seed, const uint8_t *p, size_t n) {
  uint32_t state = ~seed;
#ifdef SK_X86_CRC
  if (use_hardware_crc) return ~crc_raw_hardware(state, p, n);
#endif
  return ~crc_raw_table(state, p, n);
}

/* ---------------------------------------------------------------------------------------------------------------
 * SIGBUS guard. A copy publishes a guard (jump buffer + the mapping's address range) in a thread-local pointer for
 * the duration of its memcpy. The handler jumps back only for a fault inside that range on that thread; any other
 * SIGBUS goes to the previous handler, or, if that was the default action, the default action is restored and the
 * signal happens again (the faulting instruction re-runs, or a sent signal is raised again).
 *
 * initial-exec TLS: reading it in a signal handler is a plain %fs-relative load (the dynamic model may allocate on
 * a thread's first access, which is not async-signal-safe). Only a pointer lives there: 8 bytes of static TLS.
 * SA_NODEFER: the jump leaves the handler without restoring the signal mask (sigsetjmp(.., 0) saves none, which
 * keeps the fast path free of a sigprocmask call), so SIGBUS must not be blocked while the handler runs.
 */

typedef struct {
  sigjmp_buf jump;
  const uint8_t *lo;
  const uint8_t *hi;
} bus_guard;

static __thread bus_guard *volatile current_guard __attribute__((tls_model("initial-exec")));
static struct sigaction previous_bus_action;
static int bus_handler_installed;
static pthread_once_t bus_once = PTHREAD_ONCE_INIT;

static void on_sigbus(int sig, siginfo_t *info, void *context) {
  bus_guard *guard = current_guard;
  const uint8_t *addr = (const uint8_t *)info->si_addr;
  if (guard != NULL && addr >= guard->lo && addr < guard->hi) {
    current_guard = NULL;
    siglongjmp(guard->jump, 1);
  }
  if (previous_bus_action.sa_flags & SA_SIGINFO) {
    if (previous_bus_action.sa_sigaction != NULL) {
      previous_bus_action.sa_sigaction(sig, info, context);
      return;
    }
  } else if (previous_bus_action.sa_handler != SIG_DFL && previous_bus_action.sa_handler != SIG_IGN) {
    previous_bus_action.sa_handler(sig);
    return;
  }
  sigaction(SIGBUS, &previous_bus_action, NULL);
  /* sent by kill/raise/sigqueue (SI_USER is 0 on Linux, positive on macOS): nothing re-runs, so send it again */
  if (info->si_code <= 0 || info->si_code == SI_USER || info->si_code == SI_QUEUE) raise(sig);
}

static void install_bus_handler(void) {
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_sigaction = on_sigbus;
  action.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigemptyset(&action.sa_mask);
  bus_handler_installed = sigaction(SIGBUS, &action, &previous_bus_action) == 0;
}

/* ---------------------------------------------------------------------------------------------------------------
 * Mappings. A handle is a napi_external whose struct starts with MAP_MAGIC; the finalizer unmaps a handle nobody
 * closed.
 */

typedef struct {
  uint64_t magic;
  uint8_t *base;
  uint64_t length;
  int unmapped;
} shard_map;

#define MAP_MAGIC 0x73686b6d6d617031ull /* "shkmmap1" */

static void release_map(shard_map *m) {
  if (!m->unmapped) {
    m->unmapped = 1;
    munmap(m->base, (size_t)m->length);
  }
}

static void finalize_map(napi_env env, void *data, void *hint) {
  (void)env;
  (void)hint;
  shard_map *m = (shard_map *)data;
  release_map(m);
  m->magic = 0;
  free(m);
}

static napi_value throw_code(napi_env env, const char *code, const char *message) {
  napi_throw_error(env, code, message);
  return NULL;
}

#define CHECK(call)                                                                                                  \
  do {                                                                                                               \
    if ((call) != napi_ok) return throw_code(env, "ERR_SHARDKIT_NATIVE_ARG", "shardkit native: bad argument");       \
  } while (0)

static napi_value get_map(napi_env env, napi_value value, shard_map **out) {
  /* napi_get_value_external refuses anything but an external; the magic refuses another addon's external. A type
   * tag would do the same at ~80 ns per call (measured), a third of what a whole copy call costs. */
  void *data = NULL;
  if (napi_get_value_external(env, value, &data) != napi_ok || data == NULL || ((shard_map *)data)->magic != MAP_MAGIC) {
    return throw_code(env, "ERR_SHARDKIT_NATIVE_ARG", "shardkit native: expected a map handle");
  }
  *out = (shard_map *)data;
  return value;
}

static napi_value get_bytes(napi_env env, napi_value value, uint8_t **data, size_t *length) {
  napi_typedarray_type type;
  void *p = NULL;
  size_t count = 0;
  if (napi_get_typedarray_info(env, value, &type, &count, &p, NULL, NULL) != napi_ok || type != napi_uint8_array) {
    return throw_code(env, "ERR_SHARDKIT_NATIVE_ARG", "shardkit native: expected a Uint8Array");
  }
  *data = (uint8_t *)p;
  *length = count;
  return value;
}

/* map(fd, length, randomAccess) */
static napi_value js_map(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 2) return throw_code(env, "ERR_SHARDKIT_NATIVE_ARG", "shardkit native: map(fd, length) needs 2 arguments");
  int32_t fd;
  int64_t length;
  bool random_access = true;
  CHECK(napi_get_value_int32(env, argv[0], &fd));
  CHECK(napi_get_value_int64(env, argv[1], &length));
  if (argc > 2) CHECK(napi_get_value_bool(env, argv[2], &random_access));
  if (fd < 0 || length <= 0 || (uint64_t)length > (uint64_t)SIZE_MAX) {
    return throw_code(env, "ERR_SHARDKIT_NATIVE_ARG", "shardkit native: map needs a descriptor and a positive length");
  }
  pthread_once(&bus_once, install_bus_handler);
  if (!bus_handler_installed) return throw_code(env, "ERR_SHARDKIT_NATIVE_MAP", "shardkit native: cannot install a SIGBUS handler");
  void *base = mmap(NULL, (size_t)length, PROT_READ, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    char message[160];
    snprintf(message, sizeof message, "mmap failed: %s", strerror(errno));
    return throw_code(env, "ERR_SHARDKIT_NATIVE_MAP", message);
  }
  if (random_access) madvise(base, (size_t)length, MADV_RANDOM); /* advice only: a failure changes nothing */
  shard_map *m = (shard_map *)malloc(sizeof *m);
  if (m == NULL) {
    munmap(base, (size_t)length);
    return throw_code(env, "ERR_SHARDKIT_NATIVE_MAP", "shardkit native: out of memory");
  }
  m->magic = MAP_MAGIC;
  m->base = (uint8_t *)base;
  m->length = (uint64_t)length;
  m->unmapped = 0;
  napi_value handle;
  if (napi_create_external(env, m, finalize_map, NULL, &handle) != napi_ok) {
    release_map(m);
    free(m);
    return throw_code(env, "ERR_SHARDKIT_NATIVE_MAP", "shardkit native: cannot create a map handle");
  }
  return handle;
}

/* unmap(handle) */
static napi_value js_unmap(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  shard_map *m = NULL;
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 1 || get_map(env, argv[0], &m) == NULL) return NULL;
  release_map(m);
  return NULL;
}

/*
 * copy(handle, offset, length, target, targetOffset[, crcStart, crcLength])
 * Without crcStart/crcLength returns undefined; with them, the CRC32C of the copied bytes [crcStart, crcStart +
 * crcLength) (relative to the copy): one call instead of two when a sample holds one member to verify.
 */
static napi_value js_copy(napi_env env, napi_callback_info info) {
  size_t argc = 7;
  napi_value argv[7];
  shard_map *m = NULL;
  int64_t offset, length, target_offset, crc_start = 0, crc_length = -1;
  uint8_t *target;
  size_t target_length;
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 5) return throw_code(env, "ERR_SHARDKIT_NATIVE_ARG", "shardkit native: copy needs 5 arguments");
  if (get_map(env, argv[0], &m) == NULL) return NULL;
  CHECK(napi_get_value_int64(env, argv[1], &offset));
  CHECK(napi_get_value_int64(env, argv[2], &length));
  if (get_bytes(env, argv[3], &target, &target_length) == NULL) return NULL;
  CHECK(napi_get_value_int64(env, argv[4], &target_offset));
  if (argc >= 7) {
    CHECK(napi_get_value_int64(env, argv[5], &crc_start));
    CHECK(napi_get_value_int64(env, argv[6], &crc_length));
    if (crc_start < 0 || crc_length < 0 || crc_length > length || crc_start > length - crc_length) {
      return throw_code(env, "ERR_SHARDKIT_NATIVE_ARG", "shardkit native: checksum range outside the copy");
    }
  }
  if (m->unmapped) return throw_code(env, "ERR_SHARDKIT_NATIVE_CLOSED", "shardkit native: the map was closed");
  if (offset < 0 || length < 0 || target_offset < 0 || (uint64_t)length > target_length ||
      (uint64_t)target_offset > target_length - (uint64_t)length) {
    return throw_code(env, "ERR_SHARDKIT_NATIVE_ARG", "shardkit native: copy target range out of bounds");
  }
  if ((uint64_t)length > m->length || (uint64_t)offset > m->length - (uint64_t)length) {
    return throw_code(env, "ERR_SHARDKIT_NATIVE_RANGE", "shardkit native: range beyond the end of the mapped file");
  }
  uint8_t *dst = target + target_offset;
  if (length > 0) {
    bus_guard guard;
    guard.lo = m->base;
    guard.hi = m->base + m->length;
    if (sigsetjmp(guard.jump, 0) != 0) {
      current_guard = NULL;
      return throw_code(env, "ERR_SHARDKIT_NATIVE_TRUNCATED", "the file ends inside the mapped range (SIGBUS)");
    }
    current_guard = &guard;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    memcpy(dst, m->base + offset, (size_t)length);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    current_guard = NULL;
  }
  if (crc_length < 0) return NULL;
  napi_value result;
  CHECK(napi_create_uint32(env, crc32c_update(0, dst + crc_start, (size_t)crc_length), &result));
  return result;
}

/* crc32c(bytes[, seed]), or the table path with data = "portable" */
static napi_value js_crc32c(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  uint8_t *data;
  size_t length;
  uint32_t seed = 0;
  void *portable = NULL;
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, &portable));
  if (argc < 1) return throw_code(env, "ERR_SHARDKIT_NATIVE_ARG", "shardkit native: crc32c needs a Uint8Array");
  if (get_bytes(env, argv[0], &data, &length) == NULL) return NULL;
  if (argc > 1) {
    napi_valuetype type;
    CHECK(napi_typeof(env, argv[1], &type));
    if (type != napi_undefined) CHECK(napi_get_value_uint32(env, argv[1], &seed));
  }
  napi_value result;
  uint32_t crc = portable != NULL ? ~crc_raw_table(~seed, data, length) : crc32c_update(seed, data, length);
  CHECK(napi_create_uint32(env, crc, &result));
  return result;
}

/* read-file.c */
napi_value sk_read_file(napi_env env, napi_callback_info info);

static napi_value init(napi_env env, napi_value exports) {
  pthread_once(&crc_once, crc_init);
  napi_value hardware;
  napi_property_descriptor props[] = {
      {"map", NULL, js_map, NULL, NULL, NULL, napi_enumerable, NULL},
      {"unmap", NULL, js_unmap, NULL, NULL, NULL, napi_enumerable, NULL},
      {"copy", NULL, js_copy, NULL, NULL, NULL, napi_enumerable, NULL},
      {"crc32c", NULL, js_crc32c, NULL, NULL, NULL, napi_enumerable, NULL},
      {"crc32cPortable", NULL, js_crc32c, NULL, NULL, NULL, napi_enumerable, (void *)"portable"},
      {"readFile", NULL, sk_read_file, NULL, NULL, NULL, napi_enumerable, NULL},
  };
  if (napi_define_properties(env, exports, sizeof props / sizeof props[0], props) != napi_ok) return NULL;
  if (napi_get_boolean(env, use_hardware_crc != 0, &hardware) != napi_ok) return NULL;
  if (napi_set_named_property(env, exports, "hardwareCrc32c", hardware) != napi_ok) return NULL;
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
