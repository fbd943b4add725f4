// mlgo-farm-flags: --target=bpf
// va_arg: clang lowers va_arg itself on x86-64 (loads from the register save area), so the IR
// instruction `va_arg` never occurs in x86-64 IR; for BPF (also SPIR-V, MSP430) clang emits the
// instruction and leaves the lowering to LLVM. IR datasets only: the MIR datasets are x86-64 and
// skip modules of other targets.
int sum(int n, ...) {
  __builtin_va_list ap;
  __builtin_va_start(ap, n);
  int s = 0;
  for (int i = 0; i < n; i++)
    s += __builtin_va_arg(ap, int);
  __builtin_va_end(ap);
  return s;
}

long pick(int which, ...) {
  __builtin_va_list ap;
  __builtin_va_start(ap, which);
  long v = 0;
  for (int i = 0; i <= which; i++)
    v = __builtin_va_arg(ap, long);
  __builtin_va_end(ap);
  return v;
}
