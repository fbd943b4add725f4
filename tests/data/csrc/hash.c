/* A small open-addressing hash table: loops, calls, pointers, integer compares. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct entry { const char *key; int value; int used; };
struct table { struct entry *slots; size_t cap; size_t len; };

static uint32_t fnv1a(const char *s) {
  uint32_t h = 2166136261u;
  while (*s) { h ^= (unsigned char)*s++; h *= 16777619u; }
  return h;
}

static struct entry *probe(struct table *t, const char *key) {
  size_t i = fnv1a(key) & (t->cap - 1);
  while (t->slots[i].used && strcmp(t->slots[i].key, key) != 0)
    i = (i + 1) & (t->cap - 1);
  return &t->slots[i];
}

int table_init(struct table *t, size_t cap) {
  t->slots = calloc(cap, sizeof *t->slots);
  t->cap = cap;
  t->len = 0;
  return t->slots ? 0 : -1;
}

int table_put(struct table *t, const char *key, int value) {
  if (2 * (t->len + 1) > t->cap) return -1;
  struct entry *e = probe(t, key);
  if (!e->used) { e->used = 1; e->key = key; t->len++; }
  e->value = value;
  return 0;
}

int table_get(struct table *t, const char *key, int *out) {
  struct entry *e = probe(t, key);
  if (!e->used) return 0;
  *out = e->value;
  return 1;
}

void table_free(struct table *t) { free(t->slots); t->slots = NULL; t->cap = t->len = 0; }
