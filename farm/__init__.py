"""Shared pieces of mlgo-farm: configuration, the LLVM toolchain, the object store, the CLI."""
