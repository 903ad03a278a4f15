/*
 * verify's tar header run, in C: the plain headers of a shard chunk read in one call (src/verify/tar-header-check.ts
 * holds the fallback, formats/tar-scan.ts TarScanner, and the reference: test/property/native-tar.test.ts compares
 * them).
 *
 *   verifyTarHeaders(chunk, rows, names, io)
 *       from chunk[io[FROM]], where a header starts, reads each header of a regular file ('0', or NUL not naming a
 *       directory) whose block lies in the chunk, whose unsigned checksum and octal numbers are right, and that no
 *       pax or GNU long-name header precedes: a row in `rows` (TAR_ROW_COLUMNS numbers: data offset in the shard,
 *       size, name start and length in `names`) from row io[ROWS], its name (the ustar prefix, "/", the name field)
 *       in `names` from io[NAMES], then on to the next header. io gets AT, the chunk index of the first header not
 *       read (or the chunk's length), NEXT, that header's offset in the shard (past the chunk when the data of the
 *       last header read runs past it), and the rows and name bytes used.
 *
 * Anything else (a header cut by the chunk's end, a pax or long-name header, another type, the end of the archive,
 * a checksum or number TarScanner would read otherwise or refuse) stops the run there: TarScanner reads it, and
 * names what is wrong. The chunk is hostile: every field is read within its block, every size bounded.
 */
#include <stdint.h>
#include <string.h>

#include "verify-records.h"

#define TAR_BLOCK 512
/* formats/tar-header.ts: field offsets and lengths */
#define F_NAME 0
#define F_NAME_LEN 100
#define F_MODE 100
#define F_MODE_LEN 8
#define F_SIZE 124
#define F_SIZE_LEN 12
#define F_CHKSUM 148
#define F_CHKSUM_LEN 8
#define F_TYPEFLAG 156
#define F_MAGIC 257
#define F_PREFIX 345
#define F_PREFIX_LEN 155
#define MAX_SAFE_INTEGER 9007199254740991.0

static inline int is_space(uint8_t c) { return (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20); }

/*
 * An octal field as tar-header.ts parseNumericField reads it (digits before the first NUL, white space around them
 * trimmed, empty = 0), or -1 for anything else: a base-256 field, a malformed one (TarScanner reads or refuses those).
 */
static int64_t octal_field(const uint8_t *block, size_t off, size_t len) {
  if (block[off] & 0x80) return -1;
  size_t end = off;
  while (end < off + len && block[end] != 0) end++;
  size_t i = off;
  while (i < end && is_space(block[i])) i++;
  while (end > i && is_space(block[end - 1])) end--;
  int64_t v = 0;
  for (; i < end; i++) {
    uint8_t c = block[i];
    if (c < 0x30 || c > 0x37) return -1;
    v = v * 8 + (c - 0x30); /* at most 12 digits: below 2^36 */
  }
  return v;
}

/* The length of the NUL-terminated text in block[off, off + len). */
static inline size_t field_length(const uint8_t *block, size_t off, size_t len) {
  const uint8_t *nul = memchr(block + off, 0, len);
  return nul == NULL ? len : (size_t)(nul - (block + off));
}

/* The header's unsigned checksum: every byte, the checksum field counted as spaces. */
static uint32_t header_sum(const uint8_t *block) {
  uint32_t sum = 0x20 * F_CHKSUM_LEN;
  for (size_t i = 0; i < F_CHKSUM; i++) sum += block[i];
  for (size_t i = F_CHKSUM + F_CHKSUM_LEN; i < TAR_BLOCK; i++) sum += block[i];
  return sum;
}

#define TAR_ARGS 4

/* verifyTarHeaders(chunk, rows, names, io) */
napi_value sk_verify_tar_headers(napi_env env, napi_callback_info info) {
  napi_value argv[TAR_ARGS];
  size_t argc = TAR_ARGS;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < TAR_ARGS) return throw_arg(env, "shardkit native: verifyTarHeaders needs 4 arguments");
  uint8_t *chunk, *names;
  double *rows, *io;
  size_t len, rows_len, names_cap, io_len;
  if (!typed(env, argv[0], napi_uint8_array, (void **)&chunk, &len)) return throw_arg(env, "shardkit native: verifyTarHeaders needs a chunk (Uint8Array)");
  if (!typed(env, argv[1], napi_float64_array, (void **)&rows, &rows_len)) return throw_arg(env, "shardkit native: verifyTarHeaders needs a Float64Array for the rows");
  if (!typed(env, argv[2], napi_uint8_array, (void **)&names, &names_cap)) return throw_arg(env, "shardkit native: verifyTarHeaders needs a Uint8Array for the names");
  if (!typed(env, argv[3], napi_float64_array, (void **)&io, &io_len) || io_len < TAR_IO_COUNT) return throw_arg(env, "shardkit native: verifyTarHeaders needs a Float64Array io");
  double from_d = io[TAR_IO_FROM], base = io[TAR_IO_BASE], rows_d = io[TAR_IO_ROWS], names_d = io[TAR_IO_NAMES];
  size_t row_cap = rows_len / TAR_ROW_COLUMNS;
  if (!(from_d >= 0 && from_d <= (double)len && (double)(uint64_t)from_d == from_d) || !(base >= 0 && base <= MAX_SAFE_INTEGER) ||
      !(rows_d >= 0 && rows_d <= (double)row_cap && (double)(uint64_t)rows_d == rows_d) ||
      !(names_d >= 0 && names_d <= (double)names_cap && (double)(uint64_t)names_d == names_d)) {
    return throw_arg(env, "shardkit native: verifyTarHeaders: io out of range");
  }
  size_t used_rows = (size_t)rows_d, used_names = (size_t)names_d;
  /* the next header: past the chunk when the data of the last header read runs past it */
  uint64_t next = (uint64_t)from_d;
  while (next + TAR_BLOCK <= len && used_rows < row_cap) {
    const uint8_t *h = chunk + next;
    int64_t stored = octal_field(h, F_CHKSUM, F_CHKSUM_LEN);
    if (stored < 0 || (uint32_t)stored != header_sum(h)) break; /* 8 octal digits at most: below 2^24 */
    uint8_t type = h[F_TYPEFLAG];
    if (type != '0' && type != 0) break;
    size_t name_len = field_length(h, F_NAME, F_NAME_LEN);
    if (type == 0 && name_len > 0 && h[F_NAME + name_len - 1] == '/') break; /* v7's directory */
    int64_t size = octal_field(h, F_SIZE, F_SIZE_LEN);
    if (size < 0 || octal_field(h, F_MODE, F_MODE_LEN) < 0) break;
    size_t prefix_len = memcmp(h + F_MAGIC, "ustar\0", 6) == 0 ? field_length(h, F_PREFIX, F_PREFIX_LEN) : 0;
    size_t n = prefix_len > 0 ? prefix_len + 1 + name_len : name_len;
    if (n > names_cap - used_names) break;
    if (prefix_len > 0) {
      memcpy(names + used_names, h + F_PREFIX, prefix_len);
      names[used_names + prefix_len] = '/';
      memcpy(names + used_names + prefix_len + 1, h + F_NAME, name_len);
    } else if (name_len > 0) { /* an empty name copies nothing (`names` may be NULL when it is empty) */
      memcpy(names + used_names, h + F_NAME, name_len);
    }
    double *row = rows + used_rows * TAR_ROW_COLUMNS;
    row[TAR_ROW_DATA] = base + (double)(next + TAR_BLOCK);
    row[TAR_ROW_SIZE] = (double)size;
    row[TAR_ROW_NAME_START] = (double)used_names;
    row[TAR_ROW_NAME_LENGTH] = (double)n;
    used_rows++;
    used_names += n;
    next += TAR_BLOCK + (((uint64_t)size + TAR_BLOCK - 1) & ~(uint64_t)(TAR_BLOCK - 1));
  }
  io[TAR_IO_AT] = next < len ? (double)next : (double)len;
  io[TAR_IO_NEXT] = base + (double)next;
  io[TAR_IO_ROWS] = (double)used_rows;
  io[TAR_IO_NAMES] = (double)used_names;
  return NULL;
}
