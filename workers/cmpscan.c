/* cmpscan: the compare predicates of one LLVM bitcode module, read off the bitstream.

   Why it exists: the farm's predicate triplets (workers/predicates.py) need every `icmp`/`fcmp`
   predicate of each module, and no LLVM tool prints them short of disassembling the whole module
   (`llvm-dis`), which cost as much again as `llvm-ir2vec triplets` itself. This walks the
   bitstream the way `llvm-bcanalyzer` does, without building any IR: it descends into the module
   and its function blocks only (every other block is skipped by its length word), decodes the
   records of function bodies, and counts the predicate operand of each compare record
   (FUNC_CODE_INST_CMP2 = 28, and the old FUNC_CODE_INST_CMP = 9).

   A compare record is [lhs, (type when lhs is a forward reference), rhs, predicate, (flags)]
   with relative value ids (`BitcodeWriter::writeInstruction`, `pushValueAndType`): a forward
   reference's relative id wraps around in 32 bits, so it is 0 or at least 2^31.

   Output: `producer NAME` (the identification block's producer string, `-` when there is none:
   bitcode from another LLVM may hold compares the reader makes up, such as the compare constant
   expressions LLVM 19 removed, so the caller trusts the counts only for its own LLVM's bitcode),
   then one line `PREDICATE COUNT` per predicate seen (LLVM's CmpInst::Predicate numbers:
   0-15 FCMP_*, 32-41 ICMP_*), in increasing order. Malformed input: `error: ...` on stderr,
   exit status 1. Built by the farm with the toolchain's clang (workers/predicates.py).

   Usage: cmpscan FILE.bc */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { LIT, FIXED, VBR, ARRAY, CHAR6, BLOB };
enum { BLOCKINFO = 0, MODULE_BLOCK = 8, FUNCTION_BLOCK = 12, IDENTIFICATION_BLOCK = 13 };
enum { TOP = -1 };

typedef struct { uint8_t kind; uint64_t value; } Op;
typedef struct { int n; Op *ops; } Abbrev;
typedef struct { int n, cap; Abbrev *v; } Abbrevs;
typedef struct { uint64_t id; Abbrevs list; } Info;
typedef struct { size_t n, cap; uint64_t *v; } Vals;

static const uint8_t *buf;
static size_t nbits, pos;
static Info **infos; /* each Info allocated alone: pointers to it stay valid */
static int ninfos;
static uint64_t counts[64];
static int relative_ids = 1;
static const char *file;
static char producer[256] = "-";

_Noreturn static void fail(const char *msg) {
  fprintf(stderr, "error: %s: %s at bit %zu\n", file, msg, pos);
  exit(1);
}

static void *grow(void *p, size_t size) {
  p = realloc(p, size);
  if (!p) fail("out of memory");
  return p;
}

static uint64_t bits(unsigned n) {
  if (n == 0) return 0;
  if (n > 64 || pos + n > nbits) fail("bitcode ends inside a field");
  uint64_t v = 0;
  unsigned got = 0;
  while (got < n) { /* at most 57 bits per 8-byte load (the buffer is padded) */
    unsigned off = pos & 7, take = n - got;
    if (take > 56) take = 56;
    uint64_t w;
    memcpy(&w, buf + (pos >> 3), 8);
    w = (w >> off) & ((1ull << take) - 1); /* little-endian host: checked in main */
    v |= w << got;
    got += take;
    pos += take;
  }
  return v;
}

static uint64_t vbr(unsigned n) {
  uint64_t piece = bits(n), hi = 1ull << (n - 1), v = 0;
  unsigned shift = 0;
  for (;;) {
    v |= (piece & (hi - 1)) << shift;
    if (!(piece & hi)) return v;
    shift += n - 1;
    if (shift >= 64) fail("variable-width field too long");
    piece = bits(n);
  }
}

static void align32(void) {
  pos = (pos + 31) & ~(size_t)31;
  if (pos > nbits) fail("bitcode ends inside a block");
}

static Abbrevs *info_for(uint64_t id, int create) {
  for (int i = 0; i < ninfos; i++)
    if (infos[i]->id == id) return &infos[i]->list;
  if (!create) return NULL;
  infos = grow(infos, sizeof(Info *) * (ninfos + 1));
  infos[ninfos] = grow(NULL, sizeof(Info));
  memset(infos[ninfos], 0, sizeof(Info));
  infos[ninfos]->id = id;
  return &infos[ninfos++]->list;
}

static void define_abbrev(Abbrevs *into) {
  uint64_t n = vbr(5);
  if (n == 0 || n > 1 << 16) fail("bad abbreviation");
  Abbrev a = {0, grow(NULL, sizeof(Op) * n)};
  for (uint64_t i = 0; i < n; i++) {
    Op op = {LIT, 0};
    if (bits(1)) {
      op.value = vbr(8);
    } else {
      unsigned e = (unsigned)bits(3);
      if (e == 1 || e == 2) {
        op.kind = e == 1 ? FIXED : VBR;
        op.value = vbr(5);
        if (op.value == 0) op.kind = LIT; /* fixed(0) and vbr(0) read as a literal 0, as LLVM does */
        else if (op.value > (op.kind == FIXED ? 64u : 32u)) fail("abbreviation field too wide");
      } else if (e == 3) {
        op.kind = ARRAY;
      } else if (e == 4) {
        op.kind = CHAR6;
      } else if (e == 5) {
        op.kind = BLOB;
      } else {
        fail("unknown abbreviation encoding");
      }
    }
    a.ops[a.n++] = op;
  }
  if (into->n == into->cap) {
    into->cap = into->cap ? into->cap * 2 : 16;
    into->v = grow(into->v, sizeof(Abbrev) * into->cap);
  }
  into->v[into->n++] = a;
}

static uint64_t scalar(const Op *op) {
  switch (op->kind) {
  case LIT: return op->value;
  case FIXED: return bits((unsigned)op->value);
  case VBR: return vbr((unsigned)op->value);
  case CHAR6: return (uint64_t)"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._"[bits(6)];
  }
  fail("array or blob where a scalar belongs");
  return 0;
}

static void push(Vals *vals, uint64_t v) {
  if (vals->n == vals->cap) {
    vals->cap = vals->cap ? vals->cap * 2 : 64;
    vals->v = grow(vals->v, sizeof(uint64_t) * vals->cap);
  }
  vals->v[vals->n++] = v;
}

/* One record: its code, its operands into `vals`. */
static uint64_t record(unsigned id, const Abbrevs *inherited, int ninherited, const Abbrevs *local, Vals *vals) {
  vals->n = 0;
  if (id == 3) { /* UNABBREV_RECORD */
    uint64_t code = vbr(6), n = vbr(6);
    for (uint64_t i = 0; i < n; i++) push(vals, vbr(6));
    return code;
  }
  unsigned k = id - 4;
  const Abbrev *a = NULL;
  if ((int)k < ninherited) a = &inherited->v[k];
  else if ((int)(k - ninherited) < local->n) a = &local->v[k - ninherited];
  else fail("record uses an undefined abbreviation");
  uint64_t code = scalar(&a->ops[0]);
  for (int i = 1; i < a->n; i++) {
    const Op *op = &a->ops[i];
    if (op->kind == ARRAY) {
      if (i + 2 != a->n) fail("array is not the abbreviation's second to last operand");
      const Op *elt = &a->ops[++i];
      uint64_t n = vbr(6);
      for (uint64_t j = 0; j < n; j++) push(vals, scalar(elt));
    } else if (op->kind == BLOB) {
      uint64_t n = vbr(6);
      align32();
      if (n > (nbits - pos) / 8) fail("blob runs past the end");
      pos += n * 8;
      align32();
    } else {
      push(vals, scalar(op));
    }
  }
  return code;
}

static void compare(const Vals *vals) {
  if (vals->n < 3) fail("compare record too short");
  uint64_t lhs = vals->v[0] & 0xffffffffu;
  size_t at = relative_ids && (lhs == 0 || lhs >= 1u << 31) ? 3 : 2; /* a forward reference carries its type */
  if (!relative_ids) fail("bitcode with absolute value ids (version 0) is not supported");
  if (at >= vals->n) fail("compare record without a predicate");
  uint64_t pred = vals->v[at];
  if (!(pred <= 15 || (pred >= 32 && pred <= 41))) fail("compare record with an unknown predicate");
  counts[pred]++;
}

static int enters(int parent, uint64_t child) {
  if (child == BLOCKINFO) return parent != FUNCTION_BLOCK;
  if (parent == TOP) return child == MODULE_BLOCK || child == IDENTIFICATION_BLOCK;
  if (parent == MODULE_BLOCK) return child == FUNCTION_BLOCK;
  return 0;
}

static void block(int id, unsigned width, Vals *vals) {
  Abbrevs local = {0, 0, NULL}, none = {0, 0, NULL};
  const Abbrevs *inherited = id >= 0 ? info_for((uint64_t)id, 0) : NULL;
  if (!inherited) inherited = &none;
  int ninherited = inherited->n; /* the block-info abbreviations when the block starts, then its own */
  Abbrevs *setbid = NULL;
  for (;;) {
    /* Fewer than 8 bytes left at the top level: the end, or padding an archiver added (LLVM stops there too). */
    if (id == TOP && pos / 8 + 8 >= nbits / 8) return;
    unsigned abbrev = (unsigned)bits(width);
    if (abbrev == 0) { /* END_BLOCK */
      if (id == TOP) fail("end of block at the top level");
      align32();
      break;
    }
    if (abbrev == 1) { /* ENTER_SUBBLOCK */
      uint64_t child = vbr(8);
      unsigned w = (unsigned)vbr(4);
      align32();
      uint64_t words = bits(32);
      if (words > (nbits - pos) / 32) fail("block runs past the end");
      if (w == 0 || w > 32) fail("bad abbreviation width");
      size_t end = pos + words * 32;
      if (enters(id, child)) {
        block((int)child, w, vals);
        if (pos != end) fail("block length does not match its content");
      } else {
        pos = end;
      }
      continue;
    }
    if (abbrev == 2) { /* DEFINE_ABBREV */
      if (id == BLOCKINFO) {
        if (!setbid) fail("abbreviation in block info before SETBID");
        define_abbrev(setbid);
      } else {
        define_abbrev(&local);
      }
      continue;
    }
    uint64_t code = record(abbrev, inherited, ninherited, &local, vals);
    if (id == BLOCKINFO && code == 1) { /* SETBID */
      if (vals->n < 1) fail("empty SETBID");
      setbid = info_for(vals->v[0], 1);
    } else if (id == IDENTIFICATION_BLOCK && code == 1) { /* IDENTIFICATION_CODE_STRING: who wrote it */
      size_t n = vals->n < sizeof producer - 1 ? vals->n : sizeof producer - 1;
      for (size_t i = 0; i < n; i++) producer[i] = vals->v[i] > ' ' && vals->v[i] < 127 ? (char)vals->v[i] : '?';
      producer[n] = 0;
    } else if (id == MODULE_BLOCK && code == 1 && vals->n >= 1) { /* MODULE_CODE_VERSION */
      relative_ids = vals->v[0] >= 1;
    } else if (id == FUNCTION_BLOCK && (code == 28 || code == 9)) {
      compare(vals);
    }
  }
  for (int i = 0; i < local.n; i++) free(local.v[i].ops);
  free(local.v);
}

static uint32_t le32(const uint8_t *p) { return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24; }

int main(int argc, char **argv) {
  uint16_t probe = 1;
  if (argc != 2) {
    fprintf(stderr, "usage: cmpscan FILE.bc\n");
    return 2;
  }
  if (*(uint8_t *)&probe != 1) {
    fprintf(stderr, "error: cmpscan needs a little-endian host\n");
    return 1;
  }
  file = argv[1];
  FILE *f = fopen(file, "rb");
  if (!f) {
    perror(file);
    return 1;
  }
  size_t size = 0, cap = 1 << 20, got;
  uint8_t *data = grow(NULL, cap + 8);
  while ((got = fread(data + size, 1, cap - size, f)) > 0) {
    size += got;
    if (size == cap) data = grow(data, (cap *= 2) + 8);
  }
  if (ferror(f)) fail("cannot read");
  fclose(f);
  memset(data + size, 0, 8); /* the 8-byte loads in bits() may look past the end */
  buf = data;
  if (size >= 20 && le32(data) == 0x0B17C0DEu) { /* the wrapper header some targets put first */
    uint32_t off = le32(data + 8), len = le32(data + 12);
    if (off > size || len > size - off) fail("bad wrapper header");
    buf = data + off;
    size = len;
  }
  if (size < 4 || memcmp(buf, "BC\xC0\xDE", 4) != 0) fail("not LLVM bitcode");
  nbits = size * 8;
  pos = 32;
  Vals vals = {0, 0, NULL};
  block(TOP, 2, &vals);
  printf("producer %s\n", producer);
  for (int p = 0; p < 64; p++)
    if (counts[p]) printf("%d %llu\n", p, (unsigned long long)counts[p]);
  return fflush(stdout) == 0 ? 0 : 1;
}
