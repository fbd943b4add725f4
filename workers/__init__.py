"""Build-worker role: toolchain build, corpus extraction, triplet datasets."""
