/* Reading one pack source file (source-file.c), for read-file.c. */
#ifndef SHARDKIT_SOURCE_FILE_H
#define SHARDKIT_SOURCE_FILE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#define PATH_BYTES 4096

/* Outcomes of reading one source file (read_source) and of readSamples (io[IO_STATUS]). */
enum { RS_OK = 0, RS_ROOM = 1, RS_ERRNO = 2, RS_NOT_FILE = 3, RS_CHANGED = 4, RS_NAME = 5 };
/* The system call an RS_ERRNO came from (io[IO_SYSCALL]). */
enum { SC_OPEN = 1, SC_FSTAT = 2, SC_READ = 3 };

/* The directory of the files being read, open, and what sk_read_source may trust there (see sk_dir_of). */
typedef struct {
  int fd;
  size_t len;
  char path[PATH_BYTES];
  /* The directory's file system has a trusted ctime (ctime_trusted), and its device: files on another (a mount
   * point) are not trusted. */
  int trusted;
  dev_t dev;
} sk_dir_cache;

/* The directory to open `*path` in (cached in `c`), advancing `*path` to the name in it; AT_FDCWD when none. */
int sk_dir_of(sk_dir_cache *c, const char **path, size_t path_len);

/* Reads one source file into dst[0, room): RS_* with *size, or *err and *syscall (see source-file.c). */
int sk_read_source(int dir, const sk_dir_cache *in, const char *path, uint8_t *dst, size_t room, size_t *size, int *err,
                   int *syscall);

#endif
