; IR that no C or C++ source gives clang 22 a reason to emit, kept as IR:
; `fcmp false` / `fcmp true` (clang never emits them; LLVM folds them once any pass runs: the O0
; triplets keep them) and `ptrtoaddr` (new in LLVM 22; clang 22 still emits ptrtoint).
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-pc-linux-gnu"

define i1 @never(double %a, double %b) {
  %r = fcmp false double %a, %b
  ret i1 %r
}

define i1 @always(double %a, double %b) {
  %r = fcmp true double %a, %b
  ret i1 %r
}

define i64 @address_of(ptr %p) {
  %a = ptrtoaddr ptr %p to i64
  ret i64 %a
}
