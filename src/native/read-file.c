/*
 * Source reading for pack's reader threads, part of shardkit's native addon: GNU tar's way of reading a source file
 * (open, fstat, read, fstat, close), with the same checks as src/pack/read-source.ts: the file must be a regular
 * file and must not change while it is read (size, mtime, ctime between the fstats). readSamples reads a file that
 * last changed seconds before, on a local file system, with one fstat (see source-file.c).
 *
 * readFile(path, target, offset, room) reads one file: returns its size when it fit in target[offset, offset +
 * room) and was read there; when it is larger than room, reads nothing and returns -(size + 1), so the caller can
 * find room and call again. Throws an Error whose `code` is the errno name (ENOENT, EACCES, ...) with `syscall`, or
 * one of ERR_SHARDKIT_NATIVE_NOT_FILE / ERR_SHARDKIT_NATIVE_CHANGED.
 *
 * readSamples(...) reads a run of samples and lays them out as shard bytes (tar headers, padding, member CRC32Cs) in
 * one call; see its comment below.
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
#include <time.h>
#include <unistd.h>

#include "crc32c.h"
#include "source-file.h"

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

/* The errno name of e (ENOENT, ...), as Node gives it in Error#code; also used by list-dir.c. */
const char *sk_errno_name(int e) {
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
  return rf_throw(env, sk_errno_name(e), syscall, message);
}

/* The data and element count of a typed array of `type`; 0 when `value` is something else. */
static int typed(napi_env env, napi_value value, napi_typedarray_type type, void **data, size_t *length) {
  bool is = false;
  napi_typedarray_type t;
  napi_value ab;
  size_t offset;
  if (napi_is_typedarray(env, value, &is) != napi_ok || !is) return 0;
  if (napi_get_typedarray_info(env, value, &t, length, data, &ab, &offset) != napi_ok || t != type) return 0;
  return *data != NULL || *length == 0;
}

static const char *const SYSCALL_NAMES[] = {"", "open", "fstat", "read"};

/* Registered by shardkit.c's init as readFile, readSamples and threadCpuMs. */
napi_value sk_read_file(napi_env env, napi_callback_info info);
napi_value sk_read_samples(napi_env env, napi_callback_info info);
napi_value sk_thread_cpu_ms(napi_env env, napi_callback_info info);

/*
 * threadCpuMs(): the CPU time of the calling thread in milliseconds (CLOCK_THREAD_CPUTIME_ID), -1 where there is no
 * such clock. A reader thread compares it with the wall time of its reads: far below it, the reads wait on the disk.
 */
napi_value sk_thread_cpu_ms(napi_env env, napi_callback_info info) {
  (void)info;
  double ms = -1;
#ifdef CLOCK_THREAD_CPUTIME_ID
  struct timespec ts;
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0) ms = (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
#endif
  napi_value result;
  if (napi_create_double(env, ms, &result) != napi_ok) return NULL;
  return result;
}

napi_value sk_read_file(napi_env env, napi_callback_info info) {
  size_t argc = 4;
  napi_value argv[4];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc < 4) return rf_throw(env, "ERR_SHARDKIT_NATIVE_ARG", NULL, "readFile(path, target, offset, room)");
  char path[PATH_BYTES];
  size_t path_len = 0;
  // the length first: given a buffer, N-API stops before a character that does not fit and reports the shorter
  // length, which would open another (existing) file
  if (napi_get_value_string_utf8(env, argv[0], NULL, 0, &path_len) != napi_ok || path_len == 0) {
    return rf_throw(env, "ERR_SHARDKIT_NATIVE_ARG", NULL, "readFile: path must be a non-empty string");
  }
  if (path_len >= sizeof path) return rf_errno(env, ENAMETOOLONG, "open"); /* the kernel's PATH_MAX, NUL included */
  napi_get_value_string_utf8(env, argv[0], path, sizeof path, &path_len);
  if (strlen(path) != path_len) return rf_throw(env, "ERR_SHARDKIT_NATIVE_ARG", NULL, "readFile: path must hold no NUL");
  uint8_t *data = NULL;
  size_t length = 0;
  if (!typed(env, argv[1], napi_uint8_array, (void **)&data, &length)) return rf_throw(env, "ERR_SHARDKIT_NATIVE_ARG", NULL, "readFile: target must be a Uint8Array");
  double offset_d = -1, room_d = -1;
  napi_get_value_double(env, argv[2], &offset_d);
  napi_get_value_double(env, argv[3], &room_d);
  if (!(offset_d >= 0) || !(room_d >= 0) || offset_d + room_d > (double)length || offset_d != (double)(size_t)offset_d || room_d != (double)(size_t)room_d) {
    return rf_throw(env, "ERR_SHARDKIT_NATIVE_ARG", NULL, "readFile: offset and room must be whole numbers inside target");
  }
  size_t size = 0;
  int err = 0, syscall = 0;
  napi_value result;
  switch (sk_read_source(AT_FDCWD, NULL, path, data + (size_t)offset_d, (size_t)room_d, &size, &err, &syscall)) {
    case RS_OK: napi_create_double(env, (double)size, &result); return result;
    case RS_ROOM: napi_create_double(env, -((double)size + 1), &result); return result;
    case RS_ERRNO: return rf_errno(env, err, SYSCALL_NAMES[syscall]);
    case RS_NOT_FILE: return rf_throw(env, "ERR_SHARDKIT_NATIVE_NOT_FILE", NULL, "is no longer a regular file");
    default: return rf_throw(env, "ERR_SHARDKIT_NATIVE_CHANGED", NULL, "changed while it was being read");
  }
}

/*
 * readSamples(root, names, counts, template, target, io): reads whole samples of a pack task into target and lays
 * them out as shard bytes, so a reader thread makes one call for a run of samples instead of several per file.
 *
 * names: a Uint8Array of NUL-terminated UTF-8 strings, one per member in order: its path under root (UTF-8 bytes,
 * no NUL, a separator at the end) is the file to read, and (tar) the member name for its header. counts:
 * Uint32Array, members per sample. template: the 512-byte ustar header
 * every member shares (formats/tar-header.ts), or null for the packed layout (members back to back). Per member the
 * tar layout writes the template with the name, the size and the checksum filled in, the file's bytes, and zeros to
 * the next 512-byte boundary: the same bytes as formats/sample-layout.ts.
 *
 * io (Float64Array) carries the cursor in and out, and the results: see the IO_* indices. The call goes on from
 * sample io[IO_SAMPLE] until every sample is done or one cannot be: a stop rolls that sample back (target position
 * and cursor at its start; the bytes past it may have been written) and says why in io[IO_STATUS]. With io[IO_SKIP] = 1 the first sample is passed over
 * unread (the caller dealt with it).
 */
enum {
  IO_SAMPLE, /* in/out: next sample */
  IO_FILE, /* in/out: its first member's index over all samples */
  IO_NAME_AT, /* in/out: byte offset of its first name in names */
  IO_POS, /* in/out: where its bytes go in target */
  IO_END, /* in: end of the room in target */
  IO_SKIP, /* in: 1 to pass over the first sample; reset to 0 */
  IO_STATUS, /* out: RS_OK (all done) or why sample IO_SAMPLE stopped */
  IO_MEMBER, /* out: the member (0-based, in the sample) that stopped it */
  IO_ERRNO, /* out, RS_ERRNO: errno */
  IO_SYSCALL, /* out, RS_ERRNO: SC_OPEN, SC_FSTAT or SC_READ */
  IO_SIZE, /* out, RS_ROOM: the size of the file that did not fit */
  IO_RESULTS = 16 /* out: per member f, io[IO_RESULTS + 2f] its size and io[IO_RESULTS + 2f + 1] its CRC32C */
};

#define TAR_BLOCK 512
#define USTAR_NAME 100
#define USTAR_SIZE_AT 124
#define USTAR_SIZE_LEN 12
#define USTAR_CHKSUM_AT 148
#define USTAR_TYPE_AT 156

/* `size` rounded up to whole tar blocks. */
static size_t tar_padded(size_t size) { return (size + TAR_BLOCK - 1) / TAR_BLOCK * TAR_BLOCK; }

/*
 * The sum of the template's bytes outside the fields tar_header fills (name, size, checksum, type): a header's
 * checksum is this plus the filled fields' bytes, so each file's sums only its name and size, not 512 bytes.
 */
static unsigned template_sum(const uint8_t *template) {
  unsigned sum = 0;
  for (int i = 0; i < TAR_BLOCK; i++) {
    int filled = i < USTAR_NAME || (i >= USTAR_SIZE_AT && i < USTAR_SIZE_AT + USTAR_SIZE_LEN) ||
                 (i >= USTAR_CHKSUM_AT && i < USTAR_CHKSUM_AT + 8) || i == USTAR_TYPE_AT;
    if (!filled) sum += template[i];
  }
  return sum;
}

/* The ustar header of a regular file: template + name + size, and the checksum (base: template_sum). */
static void tar_header(uint8_t *h, const uint8_t *template, unsigned base, const char *name, size_t name_len, size_t size) {
  memcpy(h, template, TAR_BLOCK);
  memset(h, 0, USTAR_NAME);
  memcpy(h, name, name_len);
  unsigned sum = base + 8 * ' ' + '0';
  for (size_t i = 0; i < name_len; i++) sum += (uint8_t)name[i];
  unsigned long long v = size;
  for (int i = USTAR_SIZE_LEN - 2; i >= 0; i--, v >>= 3) {
    h[USTAR_SIZE_AT + i] = (uint8_t)('0' + (v & 7));
    sum += h[USTAR_SIZE_AT + i];
  }
  h[USTAR_SIZE_AT + USTAR_SIZE_LEN - 1] = 0;
  h[USTAR_TYPE_AT] = '0';
  for (int i = 5; i >= 0; i--, sum >>= 3) h[USTAR_CHKSUM_AT + i] = (uint8_t)('0' + (sum & 7));
  h[USTAR_CHKSUM_AT + 6] = 0;
  h[USTAR_CHKSUM_AT + 7] = ' ';
}

static int whole(double d, double max) { return d >= 0 && d <= max && d == (double)(size_t)d; }

napi_value sk_read_samples(napi_env env, napi_callback_info info) {
  size_t argc = 6;
  napi_value argv[6];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  const char *usage = "readSamples(root, names, counts, template, target, io)";
  if (argc < 6) return rf_throw(env, "ERR_SHARDKIT_NATIVE_ARG", NULL, usage);
  const char *root, *names;
  uint32_t *counts;
  uint8_t *template = NULL, *target;
  double *io;
  size_t root_len, names_len, n_samples, template_len = 0, target_len, io_len;
  napi_valuetype template_type;
  napi_typeof(env, argv[3], &template_type);
  if (!typed(env, argv[0], napi_uint8_array, (void **)&root, &root_len) || !typed(env, argv[1], napi_uint8_array, (void **)&names, &names_len) ||
      !typed(env, argv[2], napi_uint32_array, (void **)&counts, &n_samples) ||
      (template_type != napi_null && (!typed(env, argv[3], napi_uint8_array, (void **)&template, &template_len) || template_len != TAR_BLOCK)) ||
      !typed(env, argv[4], napi_uint8_array, (void **)&target, &target_len) || !typed(env, argv[5], napi_float64_array, (void **)&io, &io_len) ||
      io_len < IO_RESULTS) {
    return rf_throw(env, "ERR_SHARDKIT_NATIVE_ARG", NULL, usage);
  }
  if (root_len >= PATH_BYTES || memchr(root, 0, root_len) != NULL) return rf_throw(env, "ERR_SHARDKIT_NATIVE_ARG", NULL, "readSamples: root must hold no NUL and be shorter than 4096 bytes");
  if (!whole(io[IO_SAMPLE], (double)n_samples) || !whole(io[IO_FILE], 1e15) ||
      !whole(io[IO_NAME_AT], (double)names_len) || !whole(io[IO_END], (double)target_len) || !whole(io[IO_POS], io[IO_END]) ||
      (io[IO_SKIP] != 0 && io[IO_SKIP] != 1)) {
    return rf_throw(env, "ERR_SHARDKIT_NATIVE_ARG", NULL, "readSamples: the cursor in io is out of range");
  }
  size_t sample = (size_t)io[IO_SAMPLE], file = (size_t)io[IO_FILE], name_at = (size_t)io[IO_NAME_AT];
  size_t pos = (size_t)io[IO_POS], end = (size_t)io[IO_END];
  int skip = io[IO_SKIP] == 1;
  io[IO_SKIP] = 0;
  int status = RS_OK;
  unsigned base = template == NULL ? 0 : template_sum(template);
  sk_dir_cache dir = {.fd = -1};
  char path[PATH_BYTES];
  memcpy(path, root, root_len);
  for (; sample < n_samples; sample++) {
    size_t start = pos, q = name_at;
    uint32_t members = counts[sample];
    if (file + members > (io_len - IO_RESULTS) / 2) {
      if (dir.fd >= 0) close(dir.fd);
      return rf_throw(env, "ERR_SHARDKIT_NATIVE_ARG", NULL, "readSamples: io has no room for the results");
    }
    uint32_t m = 0;
    for (; m < members; m++) {
      const char *name = names + q;
      const char *name_nul = memchr(name, 0, names_len - q);
      if (name_nul == NULL) {
        if (dir.fd >= 0) close(dir.fd);
        return rf_throw(env, "ERR_SHARDKIT_NATIVE_ARG", NULL, "readSamples: fewer names than counts say");
      }
      size_t name_len = (size_t)(name_nul - name);
      q += name_len + 1;
      if (skip) continue;
      size_t header = template == NULL ? 0 : TAR_BLOCK;
      if (template != NULL && (name_len == 0 || name_len > USTAR_NAME)) {
        status = RS_NAME;
        break;
      }
      size_t size = 0, room = end - pos < header ? 0 : end - pos - header;
      int err = 0, syscall = 0;
      if (end - pos < header) {
        status = RS_ROOM;
      } else if (root_len + name_len >= PATH_BYTES) {
        status = RS_ERRNO;
        err = ENAMETOOLONG;
        syscall = SC_OPEN;
      } else {
        memcpy(path + root_len, name, name_len + 1);
        const char *file_path = path;
        int at = sk_dir_of(&dir, &file_path, root_len + name_len);
        status = sk_read_source(at, &dir, file_path, target + pos + header, room, &size, &err, &syscall);
      }
      if (status == RS_OK && template != NULL && tar_padded(size) > room) {
        status = RS_ROOM; /* the data fit, its padding does not */
      }
      if (status != RS_OK) {
        io[IO_ERRNO] = err;
        io[IO_SYSCALL] = syscall;
        io[IO_SIZE] = (double)size;
        break;
      }
      io[IO_RESULTS + 2 * (file + m)] = (double)size;
      io[IO_RESULTS + 2 * (file + m) + 1] = sk_crc32c(0, target + pos + header, size);
      if (template != NULL) {
        tar_header(target + pos, template, base, name, name_len, size);
        memset(target + pos + header + size, 0, tar_padded(size) - size);
        pos += header + tar_padded(size);
      } else {
        pos += size;
      }
    }
    if (status != RS_OK) {
      io[IO_MEMBER] = m;
      pos = start;
      break;
    }
    skip = 0;
    file += members;
    name_at = q;
  }
  if (dir.fd >= 0) close(dir.fd);
  io[IO_SAMPLE] = (double)sample;
  io[IO_FILE] = (double)file;
  io[IO_NAME_AT] = (double)name_at;
  io[IO_POS] = (double)pos;
  io[IO_STATUS] = status;
  return NULL;
}
