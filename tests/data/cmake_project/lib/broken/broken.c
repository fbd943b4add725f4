/* Does not compile: the corpus lists it as skipped and goes on. */
int broken(int x) {
  return x +;
}
