/*
 * The addon's memory map: map(), unmap(), and the copies out of a map, copyWithParams() and copyMany() (see
 * shardkit.c for what each does, and native.ts for the JS side).
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
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "crc32c.h"
#include "map.h"
#include "napi-args.h"

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

/* map(fd, length, randomAccess) */
napi_value sk_map(napi_env env, napi_callback_info info) {
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
napi_value sk_unmap(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  shard_map *m = NULL;
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 1 || get_map(env, argv[0], &m) == NULL) return NULL;
  release_map(m);
  return NULL;
}

/*
 * The copy behind copyWithParams, from arguments parsed but not yet checked against the map and the target.
 * Returns 1, or 0 with a JavaScript exception pending.
 */
static int copy_checked(napi_env env, shard_map *m, int64_t offset, int64_t length, uint8_t *target,
                        size_t target_length, int64_t target_offset, int64_t crc_start, int64_t crc_length,
                        uint32_t *crc_out) {
  if (crc_length >= 0 && (crc_start < 0 || crc_length > length || crc_start > length - crc_length)) {
    throw_code(env, "ERR_SHARDKIT_NATIVE_ARG", "shardkit native: checksum range outside the copy");
    return 0;
  }
  if (m->unmapped) {
    throw_code(env, "ERR_SHARDKIT_NATIVE_CLOSED", "shardkit native: the map was closed");
    return 0;
  }
  if (offset < 0 || length < 0 || target_offset < 0 || (uint64_t)length > target_length ||
      (uint64_t)target_offset > target_length - (uint64_t)length) {
    throw_code(env, "ERR_SHARDKIT_NATIVE_ARG", "shardkit native: copy target range out of bounds");
    return 0;
  }
  if ((uint64_t)length > m->length || (uint64_t)offset > m->length - (uint64_t)length) {
    throw_code(env, "ERR_SHARDKIT_NATIVE_RANGE", "shardkit native: range beyond the end of the mapped file");
    return 0;
  }
  uint8_t *dst = target + target_offset;
  uint32_t crc = 0;
  if (length > 0) {
    bus_guard guard;
    guard.lo = m->base;
    guard.hi = m->base + m->length;
    if (sigsetjmp(guard.jump, 0) != 0) {
      current_guard = NULL;
      throw_code(env, "ERR_SHARDKIT_NATIVE_TRUNCATED", "the file ends inside the mapped range (SIGBUS)");
      return 0;
    }
    current_guard = &guard;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    const uint8_t *src = m->base + offset;
    if (crc_length < 0) {
      memcpy(dst, src, (size_t)length);
    } else {
      /* the checksummed range is copied and checksummed in one pass; the bytes around it are copied */
      size_t head = (size_t)crc_start, body = (size_t)crc_length, tail = (size_t)length - head - body;
      memcpy(dst, src, head);
      crc = sk_crc32c_copy(0, src + head, dst + head, body);
      memcpy(dst + head + body, src + head + body, tail);
    }
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    current_guard = NULL;
  }
  *crc_out = crc;
  return 1;
}

/*
 * The per-thread parameter block of copyWithParams: a Float64Array over memory the addon owns (one per Node-API
 * environment, so per worker thread), read and written by both sides. Passing five numbers through it instead of as
 * arguments, and the CRC back through it, saves about half of a small copy's call overhead (~150 ns of ~350 ns
 * measured: every napi_get_value_* and napi_create_* call goes through several checks).
 */
enum { P_OFFSET, P_LENGTH, P_TARGET_OFFSET, P_CRC_START, P_CRC_LENGTH, P_CRC, P_COUNT };

typedef struct {
  /* Owned here, not by the ArrayBuffer over it: detaching or collecting that buffer leaves this memory valid. */
  double params[P_COUNT];
} instance_state;

static void free_instance(napi_env env, void *data, void *hint) {
  (void)env;
  (void)hint;
  free(data);
}

/* An exact integer in [-2^53, 2^53], else INT64_MIN (NaN, fractions, out of range: refused by the caller). */
static int64_t param_int(double v) {
  if (!(v >= -9007199254740992.0 && v <= 9007199254740992.0)) return INT64_MIN;
  int64_t i = (int64_t)v;
  return (double)i == v ? i : INT64_MIN;
}

/*
 * One copy described by a row of P_COUNT numbers (the parameter block, or a row of copyMany's spec): checked, done,
 * and its CRC32C written to row[P_CRC]. Returns 1, or 0 with a JavaScript exception pending.
 */
static int copy_row(napi_env env, shard_map *m, double *row, uint8_t *target, size_t target_length) {
  int64_t offset = param_int(row[P_OFFSET]), length = param_int(row[P_LENGTH]), target_offset = param_int(row[P_TARGET_OFFSET]);
  int64_t crc_length = param_int(row[P_CRC_LENGTH]);
  int64_t crc_start = crc_length < 0 ? 0 : param_int(row[P_CRC_START]);
  if (offset == INT64_MIN || length == INT64_MIN || target_offset == INT64_MIN || crc_start == INT64_MIN || crc_length == INT64_MIN) {
    throw_code(env, "ERR_SHARDKIT_NATIVE_ARG", "shardkit native: copy arguments must be integers");
    return 0;
  }
  uint32_t crc = 0;
  if (!copy_checked(env, m, offset, length, target, target_length, target_offset, crc_start, crc_length, &crc)) return 0;
  row[P_CRC] = (double)crc;
  return 1;
}

/*
 * copyWithParams(handle, target): copy(handle, params[0], params[1], target, params[2], params[3], params[4]) where
 * params[4] < 0 means no checksum; the CRC32C goes to params[5]. native.ts wraps it as copy().
 */
napi_value sk_copy_with_params(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  shard_map *m = NULL;
  uint8_t *target;
  size_t target_length;
  instance_state *state = NULL;
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  CHECK(napi_get_instance_data(env, (void **)&state));
  if (argc < 2 || state == NULL) return throw_code(env, "ERR_SHARDKIT_NATIVE_ARG", "shardkit native: copyWithParams needs 2 arguments");
  if (get_map(env, argv[0], &m) == NULL) return NULL;
  if (get_bytes(env, argv[1], &target, &target_length) == NULL) return NULL;
  copy_row(env, m, state->params, target, target_length);
  return NULL;
}

/*
 * copyMany(handle, target, spec, count): `count` copies from one map into one target, each described by a row of
 * six numbers in the Float64Array `spec` (laid out as the parameter block, P_*), the CRC32C of each going to its
 * row's last number. One call for a batch of samples instead of one each: a loader's batch pays the Node-API entry,
 * the argument checks and the guard once. Every row is checked as copyWithParams checks its block; the first bad
 * row throws, the rows before it are done.
 */
napi_value sk_copy_many(napi_env env, napi_callback_info info) {
  size_t argc = 4;
  napi_value argv[4];
  shard_map *m = NULL;
  uint8_t *target;
  size_t target_length;
  uint32_t count;
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 4) return throw_code(env, "ERR_SHARDKIT_NATIVE_ARG", "shardkit native: copyMany needs 4 arguments");
  if (get_map(env, argv[0], &m) == NULL) return NULL;
  if (get_bytes(env, argv[1], &target, &target_length) == NULL) return NULL;
  napi_typedarray_type type;
  size_t elements;
  void *data;
  napi_value array_buffer;
  size_t byte_offset;
  bool is_typed;
  CHECK(napi_is_typedarray(env, argv[2], &is_typed));
  if (!is_typed) return throw_code(env, "ERR_SHARDKIT_NATIVE_ARG", "shardkit native: copyMany needs a Float64Array spec");
  CHECK(napi_get_typedarray_info(env, argv[2], &type, &elements, &data, &array_buffer, &byte_offset));
  if (type != napi_float64_array) return throw_code(env, "ERR_SHARDKIT_NATIVE_ARG", "shardkit native: copyMany needs a Float64Array spec");
  CHECK(napi_get_value_uint32(env, argv[3], &count));
  if ((size_t)count > elements / P_COUNT) return throw_code(env, "ERR_SHARDKIT_NATIVE_ARG", "shardkit native: copyMany count beyond the spec");
  double *rows = (double *)data; /* a Float64Array's data is 8-byte aligned */
  for (uint32_t i = 0; i < count; i++) {
    if (!copy_row(env, m, rows + (size_t)i * P_COUNT, target, target_length)) return NULL;
  }
  return NULL;
}

/*
 * Creates this environment's parameter block and exports it as `copyParams`: a Float64Array over the block through
 * an external ArrayBuffer with no finalizer (the block lives until the environment ends). If JS detaches that
 * buffer, its view reads as empty (native.ts then refuses to copy) while C keeps reading valid, if stale, memory.
 */
int sk_init_copy_params(napi_env env, napi_value exports) {
  instance_state *state = calloc(1, sizeof *state);
  napi_value buffer, array;
  if (state == NULL) return 0;
  if (napi_create_external_arraybuffer(env, state->params, sizeof state->params, NULL, NULL, &buffer) != napi_ok ||
      napi_create_typedarray(env, napi_float64_array, P_COUNT, buffer, 0, &array) != napi_ok ||
      napi_set_instance_data(env, state, free_instance, NULL) != napi_ok) {
    free(state);
    return 0;
  }
  return napi_set_named_property(env, exports, "copyParams", array) == napi_ok;
}
