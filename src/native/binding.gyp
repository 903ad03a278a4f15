{
  # The optional native addon (see shardkit.c). Built by build-addon.mjs with the node-gyp that npm provides;
  # when the build fails, shardkit reads with pread and checks with @node-rs/crc32 instead.
  "targets": [
    {
      "target_name": "shardkit",
      "sources": ["shardkit.c", "map.c", "crc32c.c", "crc32c-fold.c", "read-file.c", "source-file.c", "list-dir.c", "verify-scan.c", "verify-take.c", "verify-tar.c"],
      "cflags": ["-O2", "-std=gnu11", "-Wall", "-Wextra", "-fvisibility=hidden"],
      "conditions": [
        ["OS=='win'", { "type": "none", "sources!": ["shardkit.c", "map.c", "crc32c.c", "crc32c-fold.c", "read-file.c", "source-file.c", "list-dir.c", "verify-scan.c", "verify-take.c", "verify-tar.c"] }]
      ]
    }
  ]
}
