"""A small C++ package of the tests' own: a shared library of three modules that all instantiate the same templates
(a header of containers and inline functions), and a program linked against it, as a Debian C++ package is built.

Every library module carries its own copy of the header's template functions in COMDAT groups, which the linker
keeps once: what makes a sum of objects and the linked library disagree (workers/linked.py).
"""

from __future__ import annotations

from pathlib import Path

from workers.shipped import Output

HEADER = """\
#pragma once
#include <map>
#include <string>
#include <vector>
template <class T> struct Bag {
  std::vector<T> items;
  std::map<std::string, T> named;
  void add(const std::string& k, T v) { items.push_back(v); named[k] = v; }
  T total() const { T t{}; for (const T& x : items) t += x; return t; }
  T find(const std::string& k) const { auto it = named.find(k); return it == named.end() ? T{} : it->second; }
  bool has(const std::string& k) const { return named.count(k) != 0; }
};
inline std::string key(int i) { return "k" + std::to_string(i); }
"""

MODULE = """\
#include "bag.h"
long {name}_sum(int n) {{
  Bag<long> b; Bag<double> d;
  for (int i = 0; i < n; ++i) {{ b.add(key(i), i * {k}); d.add(key(i + {k}), i * 0.5); }}
  return b.total() + (long)d.total() + b.find(key({k})) + (b.has(key(n)) ? 1 : 0) + (long)d.find(key(1));
}}
"""

MAIN = """\
#include <cstdio>
long alpha_sum(int); long beta_sum(int); long gamma_sum(int);
int main(int argc, char**) { std::printf("%ld\\n", alpha_sum(argc) + beta_sum(argc) + gamma_sum(argc)); return 0; }
"""

#: The files the package links: its library from the three modules, its program against it.
OUTPUTS = (Output("libbag.so.1", "shared", ("lib/*.cpp",)),
           Output("bagtool", "program", ("main.cpp",), needs=("libbag.so.1",)))
#: Front-end flags of every module: position-independent, C++17 (as workers/debsrc.py compiles a package)
FLAGS = ("-O2", "-Xclang", "-disable-llvm-passes", "-g0", "-fPIC", "-std=c++17")


def write(src: Path) -> Path:
    """The package's sources under `src` (lib/alpha.cpp, lib/beta.cpp, lib/gamma.cpp, main.cpp, bag.h)."""
    (src / "lib").mkdir(parents=True, exist_ok=True)
    (src / "bag.h").write_text(HEADER)
    (src / "lib" / "bag.h").write_text('#include "../bag.h"\n')
    for k, name in enumerate(("alpha", "beta", "gamma"), start=1):
        (src / "lib" / f"{name}.cpp").write_text(MODULE.format(name=name, k=k))
    (src / "main.cpp").write_text(MAIN)
    return src
