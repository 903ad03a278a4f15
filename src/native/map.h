/* The memory map and its SIGBUS-guarded copies (map.c), registered by shardkit.c. */
#ifndef SHARDKIT_MAP_H
#define SHARDKIT_MAP_H

#define NAPI_VERSION 8
#include <node_api.h>

/* map(fd, length[, randomAccess]) */
napi_value sk_map(napi_env env, napi_callback_info info);
/* unmap(handle) */
napi_value sk_unmap(napi_env env, napi_callback_info info);
/* copyWithParams(handle, target) */
napi_value sk_copy_with_params(napi_env env, napi_callback_info info);
/* copyMany(handle, target, spec, count) */
napi_value sk_copy_many(napi_env env, napi_callback_info info);
/* Creates this environment's parameter block and exports it as `copyParams`; 0 when it could not. */
int sk_init_copy_params(napi_env env, napi_value exports);

#endif
