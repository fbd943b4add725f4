"""The text, data, network and crypto packages written as training data (workers/data/recipes.toml) compile with
nothing skipped."""

from __future__ import annotations

from pathlib import Path

import pytest

from farm.toolchain import Toolchain
from tests.workers.conftest import lists_and_compiles


@pytest.mark.parametrize(("package", "sample", "expected", "left_out"), [
    ("yajl", None, {"src/yajl_parser.c", "src/yajl_version.c", "reformatter/json_reformat.c", "perf/perftest.c"},
     set()),
    ("libmaxminddb", None, {"src/maxminddb.c", "bin/mmdblookup.c", "t/threads_t.c", "t/libtap/tap.c"}, set()),
    ("utf8proc", None, {"utf8proc.c", "test/normtest.c", "test/misc.c", "bench/bench.c"},
     {"utf8proc_data.c", "test/fuzzer.c", "bench/icu.c", "bench/unistring.c"}),
    ("libuv1", 24, {"src/uv-common.c", "src/unix/epoll.c", "src/unix/linux-core.c", "test/benchmark-pump.c"},
     {"src/inet.c", "src/unix/kqueue.c", "src/win/core.c", "src/unix/random-getentropy.c", "test/test-fs.c"}),
    ("libcsv", None, {"libcsv.c", "test_csv.c", "examples/csvinfo.c"}, set()),
    ("libsrtp2", None, {"srtp/srtp.c", "crypto/cipher/aes_gcm_nss.c", "crypto/hash/hmac_nss.c", "test/rtpw.c"},
     {"crypto/cipher/aes.c", "crypto/hash/sha1.c", "crypto/cipher/aes_icm_ossl.c", "test/rtp_decoder.c"}),
    ("hiredis", None, {"hiredis.c", "async.c", "sds.c", "test.c", "examples/example.c"},
     {"dict.c", "examples/example-libevent.c"}),
    ("tre", None, {"lib/tre-compile.c", "lib/tre-match-approx.c", "src/agrep.c", "tests/retest.c"},
     {"python/tre-python.c"}),
    ("libtasn1-6", 24, {"lib/decoding.c", "lib/gl/c-ctype.c", "src/asn1Parser.c", "src/gl/read-file.c",
                        "tests/Test_tree.c", "lib/ASN1.c"},  # (its programs call asn1_parser2tree: linked, it is in)
     {"src/gl/getopt.c", "src/gl/malloc.c", "tests/CVE-2018-1000654.c", "fuzz/main.c"}),
    ("libscrypt", None, {"crypto_scrypt-nosse.c", "sha256.c", "main.c"}, set()),
    ("pcre3", 24, {"pcre_compile.c", "pcre16_jit_compile.c", "pcre32_exec.c", "pcreposix.c", "pcretest.c"},
     {"dftables.c", "sljit/sljitLir.c", "debian/jit-test.c"}),
])
def test_data_packages_compile(package: str, sample: int | None, expected: set[str], left_out: set[str],
                               tmp_path: Path, toolchain: Toolchain) -> None:
    """Each of these packages (workers/data/recipes.toml) compiles (packages above ~40 modules, a sample of 24) with
    nothing skipped; each lists the modules it should and none that its recipe leaves out."""
    lists_and_compiles(package, sample, expected, left_out, (6, 150), tmp_path, toolchain)
