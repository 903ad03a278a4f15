/*
 * Checks every CRC32C kernel of src/native/crc32c.c that the CPU running it has against the table kernel, with and
 * without the copy, over random lengths, alignments and seeds, and the standard check value. Built and run by
 * test/compat/crc32c-aarch64.test.ts for ARMv8 under qemu-aarch64 (the CI machine is x86-64). Prints the kernels,
 * then "ok <checks>", or "bad ..." and exits 1.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crc32c.h"

int main(void) {
  sk_crc32c_init();
  for (int k = 0; sk_crc32c_kernel(k) != NULL; k++) printf("kernel %s\n", sk_crc32c_kernel(k));
  uint32_t check = sk_crc32c(0, (const uint8_t *)"123456789", 9);
  if (check != 0xe3069283u) {
    printf("bad check value %08x\n", check);
    return 1;
  }
  enum { SIZE = 70000 };
  uint8_t *src = malloc(SIZE), *dst = malloc(SIZE);
  uint64_t r = 1;
  for (int i = 0; i < SIZE; i++) {
    r = r * 6364136223846793005ull + 1442695040888963407ull;
    src[i] = (uint8_t)(r >> 56);
  }
  long checks = 0;
  for (int t = 0; t < 20000; t++) {
    r = r * 6364136223846793005ull + 1442695040888963407ull;
    size_t n = (size_t)(r >> 33) % (t < 10000 ? 2000 : 65000), from = (size_t)(r >> 20) % 64, to = (size_t)t % 64;
    uint32_t seed = (uint32_t)r, want, got, copied;
    sk_crc32c_with("table", seed, src + from, NULL, n, &want);
    for (int k = 1; sk_crc32c_kernel(k) != NULL; k++) {
      const char *kernel = sk_crc32c_kernel(k);
      memset(dst, 0, SIZE);
      if (!sk_crc32c_with(kernel, seed, src + from, NULL, n, &got) ||
          !sk_crc32c_with(kernel, seed, src + from, dst + to, n, &copied) || got != want || copied != want ||
          memcmp(dst + to, src + from, n) != 0 || (to + n < SIZE && dst[to + n] != 0)) {
        printf("bad %s: length %zu from %zu seed %08x\n", kernel, n, from, seed);
        return 1;
      }
      checks++;
    }
  }
  printf("ok %ld\n", checks);
  free(src);
  free(dst);
  return 0;
}
