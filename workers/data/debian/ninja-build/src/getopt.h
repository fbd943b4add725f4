/* Stands for glibc's <getopt.h>: ninja's own getopt.h (for Windows and AIX, with getopt.c) is replaced here because
 * the farm puts each source's directory on the include path, where it would shadow the system header that ninja.cc
 * includes on Linux (configure.py passes only -I. there). */
#include_next <getopt.h>
