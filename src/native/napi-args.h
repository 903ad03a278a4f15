/* The argument and error helpers the addon's Node-API entry points share (shardkit.c, map.c). */
#ifndef SHARDKIT_NAPI_ARGS_H
#define SHARDKIT_NAPI_ARGS_H

#define NAPI_VERSION 8
#include <node_api.h>

#include <stddef.h>
#include <stdint.h>

/* Throws an Error with `code` (ERR_SHARDKIT_NATIVE_*) and returns NULL, for `return throw_code(...)`. */
static inline napi_value throw_code(napi_env env, const char *code, const char *message) {
  napi_throw_error(env, code, message);
  return NULL;
}

/* Returns from the entry point with ERR_SHARDKIT_NATIVE_ARG when a Node-API call fails. */
#define CHECK(call)                                                                                                  \
  do {                                                                                                               \
    if ((call) != napi_ok) return throw_code(env, "ERR_SHARDKIT_NATIVE_ARG", "shardkit native: bad argument");       \
  } while (0)

/* A Uint8Array's bytes and length; NULL with an exception pending when `value` is not one. */
static inline napi_value get_bytes(napi_env env, napi_value value, uint8_t **data, size_t *length) {
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

#endif
