/* Writes OUT, a header with a table named after PREFIX; with a third argument "fail" it fails. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: mkheader OUT PREFIX [fail]\n");
    return 2;
  }
  if (argc > 3 && strcmp(argv[3], "fail") == 0) {
    fprintf(stderr, "mkheader: error: asked to fail\n");
    return 1;
  }
  char upper[64];
  size_t n = strlen(argv[2]);
  if (n >= sizeof upper)
    return 2;
  for (size_t i = 0; i <= n; ++i)
    upper[i] = (char)toupper((unsigned char)argv[2][i]);
  FILE *f = fopen(argv[1], "w");
  if (!f) {
    perror(argv[1]);
    return 1;
  }
  fprintf(f, "#define %s_TABLE_SIZE 8\n", upper);
  fprintf(f, "static const int %s_table[%s_TABLE_SIZE] = {", argv[2], upper);
  for (int i = 0; i < 8; ++i)
    fprintf(f, "%d%s", (i * 7 + 3) % 11, i < 7 ? ", " : "};\n");
  return fclose(f) != 0;
}
