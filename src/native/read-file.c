/*
 * readFile(path, target, offset, room), part of shardkit's native addon, for pack's reader threads: GNU tar's way of reading one source file
 * (open, fstat, read, fstat, close) in one call instead of five, with the same checks as src/pack/read-source.ts:
 * the file must be a regular file and must not change while it is read (size, mtime, ctime between the fstats).
 *
 * Returns the file's size when it fit in target[offset, offset + room) and was read there; when it is larger than
 * room, reads nothing and returns -(size + 1), so the caller can find room and call again.
 * Throws an Error whose `code` is the errno name (ENOENT, EACCES, ...) with `syscall`, or one of
 * ERR_SHARDKIT_NATIVE_NOT_FILE / ERR_SHARDKIT_NATIVE_CHANGED.
 */
#define NAPI_VERSION 8
#include <node_api.h>

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PATH_BYTES 4096

static napi_value rf_throw(napi_env env, const char *code, const char *syscall, const char *message) {
  napi_value err, msg, c, sc;
  napi_create_string_utf8(env, message, NAPI_AUTO_LENGTH, &msg);
  napi_create_error(env, NULL, msg, &err);
  napi_create_string_utf8(env, code, NAPI_AUTO_LENGTH, &c);
  napi_set_named_property(env, err, "code", c);
  if (syscall != NULL) {
    napi_create_string_utf8(env, syscall, NAPI_AUTO_LENGTH, &sc);
    napi_set_named_property(env, err, "syscall", sc);
  }
  napi_throw(env, err);
  return NULL;
}

static const char *errno_name(int e) {
  switch (e) {
    case ENOENT: return "ENOENT";
    case EACCES: return "EACCES";
    case EPERM: return "EPERM";
    case EISDIR: return "EISDIR";
    case ELOOP: return "ELOOP";
    case EMFILE: return "EMFILE";
    case ENFILE: return "ENFILE";
    case ENOTDIR: return "ENOTDIR";
    case ENAMETOOLONG: return "ENAMETOOLONG";
    case EIO: return "EIO";
    case ENOMEM: return "ENOMEM";
    default: return "EUNKNOWN";
  }
}

static napi_value rf_errno(napi_env env, int e, const char *syscall) {
  char message[256];
  snprintf(message, sizeof message, "%s: %s", syscall, strerror(e));
  return rf_throw(env, errno_name(e), syscall, message);
}

static int same_stat(const struct stat *a, const struct stat *b) {
  return a->st_size == b->st_size && a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
         a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

/* Registered by shardkit.c's init as readFile. */
napi_value sk_read_file(napi_env env, napi_callback_info info);

napi_value sk_read_file(napi_env env, napi_callback_info info) {
  size_t argc = 4;
  napi_value argv[4];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc < 4) return rf_throw(env, "ERR_SHARDKIT_NATIVE_ARG", NULL, "readFile(path, target, offset, room)");
  char path[PATH_BYTES];
  size_t path_len = 0;
  if (napi_get_value_string_utf8(env, argv[0], path, sizeof path, &path_len) != napi_ok || path_len == 0 || path_len >= sizeof path - 1 ||
      strlen(path) != path_len) {
    return rf_throw(env, "ERR_SHARDKIT_NATIVE_ARG", NULL, "readFile: path must be a non-empty string without NUL, shorter than 4095 bytes");
  }
  bool is_typed = false;
  napi_is_typedarray(env, argv[1], &is_typed);
  if (!is_typed) return rf_throw(env, "ERR_SHARDKIT_NATIVE_ARG", NULL, "readFile: target must be a Uint8Array");
  napi_typedarray_type type;
  size_t length = 0, byte_offset = 0;
  void *data = NULL;
  napi_value ab;
  napi_get_typedarray_info(env, argv[1], &type, &length, &data, &ab, &byte_offset);
  if (type != napi_uint8_array) return rf_throw(env, "ERR_SHARDKIT_NATIVE_ARG", NULL, "readFile: target must be a Uint8Array");
  double offset_d = -1, room_d = -1;
  napi_get_value_double(env, argv[2], &offset_d);
  napi_get_value_double(env, argv[3], &room_d);
  if (!(offset_d >= 0) || !(room_d >= 0) || offset_d + room_d > (double)length || offset_d != (double)(size_t)offset_d || room_d != (double)(size_t)room_d) {
    return rf_throw(env, "ERR_SHARDKIT_NATIVE_ARG", NULL, "readFile: offset and room must be whole numbers inside target");
  }
  uint8_t *dst = (uint8_t *)data + (size_t)offset_d;
  size_t room = (size_t)room_d;

  // O_NONBLOCK: a FIFO swapped in for a listed file must not block the pack (fstat then says it is not a file)
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return rf_errno(env, errno, "open");
  struct stat before, after;
  if (fstat(fd, &before) != 0) {
    int e = errno;
    close(fd);
    return rf_errno(env, e, "fstat");
  }
  if (!S_ISREG(before.st_mode)) {
    close(fd);
    return rf_throw(env, "ERR_SHARDKIT_NATIVE_NOT_FILE", NULL, "is no longer a regular file");
  }
  size_t size = (size_t)before.st_size;
  napi_value result;
  if (size > room) {
    close(fd);
    napi_create_double(env, -((double)size + 1), &result);
    return result;
  }
  size_t done = 0;
  while (done < size) {
    ssize_t n = pread(fd, dst + done, size - done, (off_t)done);
    if (n < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      close(fd);
      return rf_errno(env, e, "read");
    }
    if (n == 0) {
      close(fd);
      return rf_throw(env, "ERR_SHARDKIT_NATIVE_CHANGED", NULL, "changed while it was being read");
    }
    done += (size_t)n;
  }
  int ok = fstat(fd, &after) == 0;
  int e = errno;
  close(fd);
  if (!ok) return rf_errno(env, e, "fstat");
  if (!same_stat(&before, &after)) return rf_throw(env, "ERR_SHARDKIT_NATIVE_CHANGED", NULL, "changed while it was being read");
  napi_create_double(env, (double)size, &result);
  return result;
}

