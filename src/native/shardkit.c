/*
 * shardkit's optional native addon: what the local synchronous read path needs and Node does not have.
 *
 *   map(fd, length[, randomAccess])   read-only MAP_SHARED mapping of a whole file -> opaque handle
 *   unmap(handle)                     munmap now (idempotent); later copies throw instead of touching freed memory
 *   copyWithParams(handle, target)    copies mapped bytes into a JS-owned Uint8Array (bounds-checked here), with
 *                                     offset, length, target offset and an optional CRC32C sub-range in copyParams,
 *                                     a per-thread Float64Array, and the CRC32C of that range (one pass) back in it;
 *                                     native.ts exposes it as copy(handle, offset, length, target, targetOffset
 *                                     [, crcStart, crcLength])
 *   copyMany(handle, target, spec, n) n such copies from one map into one target in one call, each a row of six
 *                                     numbers in the Float64Array spec (its CRC32C written to the row's last)
 *   crc32c(bytes[, seed])             CRC32C (Castagnoli), equal to formats/checksum.ts crc32c
 *   crc32cWith(kernel, bytes[, seed[, copyTarget]])
 *                                     the same by one named kernel of crc32cKernels, copying bytes into copyTarget in
 *                                     the same pass when given (for tests: every kernel this CPU has)
 *   crc32cKernels                     the CRC32C kernels this CPU has, slowest first; crc32c uses the last (the
 *                                     first is the table: more than one means CRC instructions)
 *   readFile(path, target, offset, room)
 *                                     pack's source read in one call (read-file.c)
 *   verifyLeafScan(...), verifyTakeLones(...), verifyTarHeaders(...)
 *                                     verify's per-sample loop: a leaf page's records, the run of them whose
 *                                     bytes a shard chunk holds intact, and the chunk's plain tar headers
 *                                     (verify-scan.c, verify-take.c, verify-tar.c)
 *
 *
 * The map and its copies live in map.c; this file registers the addon's functions and holds the CRC32C entry points.
 *
 * Error codes thrown here (the JS side turns them into ShardkitErrors):
 *   ERR_SHARDKIT_NATIVE_ARG        a bad argument (a bug in the caller: the JS side validates first)
 */
#include <string.h>

#include "crc32c.h"
#include "map.h"
#include "napi-args.h"

/* crc32c(bytes[, seed]), or with data = "with": crc32cWith(kernel, bytes[, seed[, copyTarget]]) */
static napi_value js_crc32c(napi_env env, napi_callback_info info) {
  size_t argc = 4;
  napi_value argv[4];
  void *with = NULL;
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, &with));
  size_t first = with != NULL ? 1 : 0;
  char kernel[32] = "";
  size_t kernel_length = 0;
  if (with != NULL && (argc < 1 || napi_get_value_string_utf8(env, argv[0], kernel, sizeof kernel, &kernel_length) != napi_ok ||
                       strlen(kernel) != kernel_length)) {
    return throw_code(env, "ERR_SHARDKIT_NATIVE_ARG", "shardkit native: crc32cWith needs a kernel name");
  }
  uint8_t *data, *target = NULL;
  size_t length, target_length = 0;
  uint32_t seed = 0;
  if (argc <= first) return throw_code(env, "ERR_SHARDKIT_NATIVE_ARG", "shardkit native: crc32c needs a Uint8Array");
  if (get_bytes(env, argv[first], &data, &length) == NULL) return NULL;
  if (argc > first + 1) {
    napi_valuetype type;
    CHECK(napi_typeof(env, argv[first + 1], &type));
    if (type != napi_undefined) CHECK(napi_get_value_uint32(env, argv[first + 1], &seed));
  }
  napi_valuetype target_type = napi_undefined;
  if (with != NULL && argc > first + 2) CHECK(napi_typeof(env, argv[first + 2], &target_type));
  if (target_type != napi_undefined && target_type != napi_null) {
    if (get_bytes(env, argv[first + 2], &target, &target_length) == NULL) return NULL;
    if (target_length < length) return throw_code(env, "ERR_SHARDKIT_NATIVE_ARG", "shardkit native: copy target too short");
    if (length > 0 && target < data + length && data < target + length) {
      return throw_code(env, "ERR_SHARDKIT_NATIVE_ARG", "shardkit native: copy target overlaps the bytes");
    }
  }
  uint32_t crc = 0;
  if (with == NULL) {
    crc = sk_crc32c(seed, data, length);
  } else if (!sk_crc32c_with(kernel, seed, data, target, length, &crc)) {
    return throw_code(env, "ERR_SHARDKIT_NATIVE_ARG", "shardkit native: no such CRC32C kernel on this CPU");
  }
  napi_value result;
  CHECK(napi_create_uint32(env, crc, &result));
  return result;
}

/* crc32cKernels: the names of the kernels this CPU has, slowest first */
static napi_value crc32c_kernels(napi_env env) {
  napi_value list, name;
  if (napi_create_array(env, &list) != napi_ok) return NULL;
  for (uint32_t k = 0; sk_crc32c_kernel((int)k) != NULL; k++) {
    if (napi_create_string_utf8(env, sk_crc32c_kernel((int)k), NAPI_AUTO_LENGTH, &name) != napi_ok ||
        napi_set_element(env, list, k, name) != napi_ok) {
      return NULL;
    }
  }
  return list;
}

/* read-file.c */
napi_value sk_read_file(napi_env env, napi_callback_info info);
napi_value sk_read_samples(napi_env env, napi_callback_info info);
napi_value sk_thread_cpu_ms(napi_env env, napi_callback_info info);
/* list-dir.c */
napi_value sk_list_directory(napi_env env, napi_callback_info info);
/* verify-scan.c, verify-take.c, verify-tar.c */
napi_value sk_verify_leaf_scan(napi_env env, napi_callback_info info);
napi_value sk_verify_take_lones(napi_env env, napi_callback_info info);
napi_value sk_verify_tar_headers(napi_env env, napi_callback_info info);

static napi_value init(napi_env env, napi_value exports) {
  sk_crc32c_init();
  napi_property_descriptor props[] = {
      {"map", NULL, sk_map, NULL, NULL, NULL, napi_enumerable, NULL},
      {"unmap", NULL, sk_unmap, NULL, NULL, NULL, napi_enumerable, NULL},
      {"copyWithParams", NULL, sk_copy_with_params, NULL, NULL, NULL, napi_enumerable, NULL},
      {"copyMany", NULL, sk_copy_many, NULL, NULL, NULL, napi_enumerable, NULL},
      {"crc32c", NULL, js_crc32c, NULL, NULL, NULL, napi_enumerable, NULL},
      {"crc32cWith", NULL, js_crc32c, NULL, NULL, NULL, napi_enumerable, (void *)"with"},
      {"readFile", NULL, sk_read_file, NULL, NULL, NULL, napi_enumerable, NULL},
      {"readSamples", NULL, sk_read_samples, NULL, NULL, NULL, napi_enumerable, NULL},
      {"listDirectory", NULL, sk_list_directory, NULL, NULL, NULL, napi_enumerable, NULL},
      {"threadCpuMs", NULL, sk_thread_cpu_ms, NULL, NULL, NULL, napi_enumerable, NULL},
      {"verifyLeafScan", NULL, sk_verify_leaf_scan, NULL, NULL, NULL, napi_enumerable, NULL},
      {"verifyTakeLones", NULL, sk_verify_take_lones, NULL, NULL, NULL, napi_enumerable, NULL},
      {"verifyTarHeaders", NULL, sk_verify_tar_headers, NULL, NULL, NULL, napi_enumerable, NULL},
  };
  if (napi_define_properties(env, exports, sizeof props / sizeof props[0], props) != napi_ok) return NULL;
  napi_value kernels = crc32c_kernels(env);
  if (kernels == NULL || napi_set_named_property(env, exports, "crc32cKernels", kernels) != napi_ok) return NULL;
  if (!sk_init_copy_params(env, exports)) return NULL;
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
