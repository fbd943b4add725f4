#!/usr/bin/env bash
# Idempotent set-up of one mlgo-farm machine (Debian 12): system packages and a pinned virtualenv.
# Usage: deploy/setup.sh   (requirements.lock pins runtime and test packages alike)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
venv=${MLGO_FARM_VENV:-$here/.venv}
# chromium + chromium-driver: the browser tests drive Debian's browser (no browser download at install time)
# the headers corpus recipes compile against (workers/data/recipes.toml): gmp.h (libtomcrypt), OpenSSL's (libevent,
# libzip), zlib.h and png.h (libpng1.6, libzip, jbig2dec), NSS's (libsrtp2's crypto engine), termcap.h (lame)
# postgresql-15: the tests run the history on a PostgreSQL cluster of their own (tests/pgserver.py); a farm on several
# machines keeps its history on one (docs/operations.md). Debian's default cluster is not wanted: see below.
# The C++ packages' recipes (issue 45) compile and link against: readline (hunspell), brotli (woff2), snappy, gtest,
# gmock and benchmark (leveldb, snappy), fmt and catch2 (spdlog), boost and mdds (libixion, which links Python's
# library for its module), utfcpp and cppunit (taglib), systemd (spdlog's journal sink), hwloc (onetbb's tbbbind).
# The fresh C evaluation packages of 2026-11-28: libnl-3 and libnl-genl-3, lm-sensors' headers (htop).
# The fresh C++ split's: doctest (box2d's unit tests), LLVM's OpenMP runtime (libsquish, built -fopenmp).
# autoconf, automake and libtool: the README's "Use a policy" lines are tested on an autotools+libtool project
# (tests/policyhost/test_shim.py).
apt_pkgs=(clang-22 llvm-22 lld-22 redis-server valgrind ninja-build cmake git dpkg-dev ca-certificates ccache
  chromium chromium-driver libgmp-dev libssl-dev zlib1g-dev libpng-dev libnss3-dev libncurses-dev postgresql-15
  libreadline-dev libbrotli-dev libsnappy-dev libgtest-dev libgmock-dev libbenchmark-dev libfmt-dev catch2
  libboost-dev libboost-filesystem-dev libmdds-dev libutfcpp-dev libcppunit-dev libsystemd-dev libhwloc-dev
  libpython3.11-dev libnl-3-dev libnl-genl-3-dev libsensors-dev doctest-dev libomp-22-dev autoconf automake
  libtool)

sudo_() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

missing=()
for p in "${apt_pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# `apt-get source` needs a deb-src entry beside each deb one.
src=/etc/apt/sources.list.d/debian.sources
need_update=0
if [ -f "$src" ] && ! grep -q '^Types:.*deb-src' "$src"; then
  sudo_ sed -i 's/^Types: deb$/Types: deb deb-src/' "$src"; need_update=1
fi
if [ ! -f "$src" ] && [ -f /etc/apt/sources.list ] && ! grep -q '^deb-src' /etc/apt/sources.list; then
  sudo_ sh -c "sed -n 's/^deb /deb-src /p' /etc/apt/sources.list >> /etc/apt/sources.list"; need_update=1
fi
if [ ${#missing[@]} -gt 0 ] || [ $need_update -eq 1 ]; then
  sudo_ apt-get update -q
fi
# Installing PostgreSQL's server would create and start a cluster `main` on port 5432: nothing of the farm uses it.
# Only on a machine without the server yet: postgresql-common first (it creates no cluster), then its setting.
if [[ " ${missing[*]} " == *" postgresql-15 "* ]]; then
  conf=/etc/postgresql-common/createcluster.conf
  dpkg-query -W -f='${Status}' postgresql-common 2>/dev/null | grep -q "install ok installed" ||
    sudo_ env DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql-common
  if ! grep -q '^create_main_cluster *= *false' "$conf" 2>/dev/null; then
    sudo_ sed -i '/^#* *create_main_cluster *=/d' "$conf"
    echo 'create_main_cluster = false' | sudo_ tee -a "$conf" >/dev/null
  fi
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo_ env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"
fi

# pip, without the one warning per package a machine's pip configuration can add (a find-links or index
# location that does not exist: `WARNING: Location ... is ignored`, ~190 lines); every other line is kept.
# (pipefail: the pipeline fails when pip does.)
pip_install() {
  "$venv/bin/pip" install -q --disable-pip-version-check "$@" 2>&1 \
    | { grep -v '^WARNING: Location .* is ignored' || true; } >&2
}

stamp=$venv/.installed-$(cat "$here/requirements.lock" "$here/pyproject.toml" | sha256sum | cut -c1-16)
if [ ! -f "$stamp" ]; then
  [ -x "$venv/bin/python" ] || python3.11 -m venv "$venv"
  pip_install -r "$here/requirements.lock"
  pip_install --no-deps -e "$here"
  rm -f "$venv"/.installed-*; touch "$stamp"
fi
# An editable install leaves the farm's own modules uncompiled, and with PYTHONDONTWRITEBYTECODE set
# every verb would compile them again (~30 ms a run); compileall rewrites only what changed.
"$venv/bin/python" -m compileall -q "$here"/farm "$here"/workers "$here"/vocabgen "$here"/policyhost "$here"/regression \
  "$here"/master >/dev/null
echo "setup: ok ($("$venv/bin/python" --version), $(/usr/lib/llvm-22/bin/llvm-config --version 2>/dev/null || echo 'llvm-22 missing'))"
