#include <stdio.h>

int main(void) {
  puts("helper");
  return 0;
}
