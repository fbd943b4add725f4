// Control flow LLVM's own code does not use: computed goto (indirectbr, blockaddress), asm goto
// (callbr), switch, unreachable, and freeze (`__builtin_nondeterministic_value` is a frozen poison).
int interpret(const unsigned char *code, int acc) {
  static void *const ops[] = {&&op_add, &&op_sub, &&op_halt};
  const unsigned char *pc = code;
  goto *ops[*pc++];
op_add:
  acc += *pc++;
  goto *ops[*pc++];
op_sub:
  acc -= *pc++;
  goto *ops[*pc++];
op_halt:
  return acc;
}

int maybe_jump(int x) {
  asm goto("testl %0, %0; jne %l1" : : "r"(x) : "cc" : taken);
  return 0;
taken:
  return 1;
}

int dispatch(int op, int a, int b) {
  switch (op) {
  case 0: return a + b;
  case 1: return a - b;
  case 2: return a * b;
  case 3: return (unsigned)a / (unsigned)b;
  case 4: return (unsigned)a % (unsigned)b;
  case 5: return a >> b;
  case 6: return (unsigned)a >> b;
  default: __builtin_unreachable();
  }
}

int arbitrary(int x) { return __builtin_nondeterministic_value(x) | 1; }

// A label's address handed to code (not only to a static table): MIR's BlockAddress operand, which the table above
// never makes (its addresses are data, loaded, not an instruction's operand).
extern void keep_label(void *label);
int resume_at(int x) {
  keep_label(&&again);
again:
  if (x > 100) return x;
  x = x * 3 + 1;
  goto *(x & 1 ? &&again : &&done);
done:
  return -x;
}
