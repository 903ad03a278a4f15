/*
 * What verify-scan.c (the leaf scan) and verify-take.c (the member check) share: the layout of the record arrays
 * the scan fills and the check reads, the indices of their `out` and `io` arrays (src/native/native.ts holds the
 * same numbers), and their argument helpers.
 */
#ifndef SHARDKIT_VERIFY_RECORDS_H
#define SHARDKIT_VERIFY_RECORDS_H

#define NAPI_VERSION 8
#include <node_api.h>

#include <stddef.h>

/*
 * The record arrays, one after the other in one Float64Array (src/native/native.ts RecordArrays): each `capacity`
 * numbers long, capacity = length / RECORD_ARRAYS; members are uint32 in the first half of theirs. One typed array a
 * call, not seven: each costs N-API ~400 instructions to unwrap, ~10 a record on tiny samples.
 */
enum { RECORD_SHARD, RECORD_OFFSET, RECORD_LENGTH, RECORD_SIZE, RECORD_STORED, RECORD_LONE_CRC, RECORD_MEMBERS, RECORD_NAME_START, RECORD_NAME_LENGTH,
       RECORD_MEMBER_ROW, RECORD_ARRAYS };

/* verifyLeafScan's member table: a row a member, these columns (src/native/native.ts MemberRow) */
enum { ROW_START, ROW_SIZE, ROW_CRC, ROW_NAME_START, ROW_NAME_LENGTH, ROW_COLUMNS };

/* verifyLeafScan's out: indices (src/native/native.ts LeafScanOut) */
enum { OUT_COUNT, OUT_NEXT, OUT_TOTAL_MEMBERS, OUT_TOTAL_LENGTH, OUT_TOTAL_SIZE, OUT_TOTAL_STORED, OUT_ONE_SHARD, OUT_MAX_END,
       OUT_FIRST_KEY_LENGTH, OUT_LAST_KEY_LENGTH, OUT_NAMES_WANTED, LEAF_OUT_COUNT };
/* verifyTakeLones' io: indices (src/native/native.ts TakeLonesIo) */
enum { IO_FROM, IO_COUNT, IO_SHARD, IO_POS, IO_PREV_END, IO_LAST, IO_NEXT, IO_BYTES, TAKE_IO_COUNT };
/* verifyTarHeaders' rows: columns (src/native/native.ts TarRow) and io indices (TarHeadersIo) */
enum { TAR_ROW_DATA, TAR_ROW_SIZE, TAR_ROW_NAME_START, TAR_ROW_NAME_LENGTH, TAR_ROW_COLUMNS };
enum { TAR_IO_FROM, TAR_IO_BASE, TAR_IO_ROWS, TAR_IO_NAMES, TAR_IO_AT, TAR_IO_NEXT, TAR_IO_COUNT };

static inline napi_value throw_arg(napi_env env, const char *message) {
  napi_throw_error(env, "ERR_SHARDKIT_NATIVE_ARG", message);
  return NULL;
}

/* The data and element count of a typed array of `type`; 0 when `value` is something else. */
static inline int typed(napi_env env, napi_value value, napi_typedarray_type type, void **data, size_t *length) {
  napi_typedarray_type t;
  napi_value ab;
  size_t offset;
  if (napi_get_typedarray_info(env, value, &t, length, data, &ab, &offset) != napi_ok || t != type) return 0;
  return *data != NULL || *length == 0;
}

#endif
