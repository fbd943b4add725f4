// Dump, for LLVM's X86 target, every physical register's MIR name and its minimal register class ID
// (TargetRegisterInfo::getMinimalPhysRegClass, what MIR2Vec maps a physical register operand to), or -1,
// and the register mask names: the source of workers/data/x86_mir_registers.tsv (workers/mirtriplets.py).
//   B=/usr/lib/llvm-22/bin; $B/clang++ $($B/llvm-config --cxxflags) mirregs.cpp -o mirregs \
//     $($B/llvm-config --ldflags) -lLLVM-22 && ./mirregs
#include "llvm/CodeGen/TargetRegisterInfo.h"
#include "llvm/CodeGen/TargetSubtargetInfo.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Triple.h"
#include <cctype>
#include <cstdio>
#include <string>
using namespace llvm;
int main() {
  LLVMInitializeX86TargetInfo(); LLVMInitializeX86Target(); LLVMInitializeX86TargetMC();
  Triple TT("x86_64-unknown-linux-gnu");
  std::string Err;
  const Target *T = TargetRegistry::lookupTarget(TT, Err);
  if (!T) { fprintf(stderr, "%s\n", Err.c_str()); return 1; }
  TargetMachine *TM = T->createTargetMachine(TT, "x86-64", "", TargetOptions(), std::nullopt);
  LLVMContext Ctx; Module M("m", Ctx);
  Function *F = Function::Create(FunctionType::get(Type::getVoidTy(Ctx), false), GlobalValue::ExternalLinkage, "f", M);
  const TargetRegisterInfo *TRI = TM->getSubtargetImpl(*F)->getRegisterInfo();
  for (unsigned RC = 0; RC < TRI->getNumRegClasses(); ++RC)
    printf("class\t%u\t%s\n", RC, TRI->getRegClassName(TRI->getRegClass(RC)));
  for (const char *N : TRI->getRegMaskNames()) printf("regmask\t%s\n", N);
  for (unsigned R = 1; R < TRI->getNumRegs(); ++R) {
    std::string N = TRI->getName(R);
    for (auto &c : N) c = std::tolower((unsigned char)c);
    const TargetRegisterClass *C = TRI->getMinimalPhysRegClass(MCRegister(R));
    printf("reg\t%s\t%d\n", N.c_str(), C ? (int)C->getID() : -1);
  }
}
