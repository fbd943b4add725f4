// addrspacecast: x86 segment-relative pointers (address space 256 is %gs, 257 %fs) converted to
// ordinary pointers, as thread-local and kernel code does.
typedef __attribute__((address_space(256))) int gs_int;
typedef __attribute__((address_space(257))) long fs_long;

int read_gs(gs_int *p) { return *(int *)p; }
long read_fs(fs_long *p, long i) { return ((long *)p)[i]; }
gs_int *to_gs(int *p) { return (gs_int *)p; }
