"""Write ``hip_kernels_gfx942.s``: AMDGCN assembly for three HIP-shaped kernels, made by the AMDGPU
back end of the LLVM inside the Triton wheel (the back end hipcc uses), so the HIP parser is
tested on real compiler output on a machine without ROCm.

Run: python tests/data/compiler/make_amdgcn_sample.py
"""

from __future__ import annotations

from pathlib import Path

IR = r"""
target triple = "amdgcn-amd-amdhsa"

@partial = internal addrspace(3) global [256 x float] undef, align 4

declare i32 @llvm.amdgcn.workitem.id.x()
declare i32 @llvm.amdgcn.workgroup.id.x()
declare void @llvm.amdgcn.s.barrier()
declare <16 x float> @llvm.amdgcn.mfma.f32.32x32x8f16(<4 x half>, <4 x half>, <16 x float>, i32, i32, i32)

; add_kernel(const float4* x, const float4* y, float4* out, int n4): one float4 per thread
define amdgpu_kernel void @_Z10add_kernelPK15HIP_vector_typeIfLj4EES2_PS0_i(
    ptr addrspace(1) %x, ptr addrspace(1) %y, ptr addrspace(1) %out, i32 %n4) #0 {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %bid = call i32 @llvm.amdgcn.workgroup.id.x()
  %base = mul i32 %bid, 256
  %j = add i32 %base, %tid
  %ok = icmp slt i32 %j, %n4
  br i1 %ok, label %body, label %exit
body:
  %k = sext i32 %j to i64
  %px = getelementptr <4 x float>, ptr addrspace(1) %x, i64 %k
  %py = getelementptr <4 x float>, ptr addrspace(1) %y, i64 %k
  %po = getelementptr <4 x float>, ptr addrspace(1) %out, i64 %k
  %a = load <4 x float>, ptr addrspace(1) %px, align 16
  %b = load <4 x float>, ptr addrspace(1) %py, align 16
  %s = fadd <4 x float> %a, %b
  store <4 x float> %s, ptr addrspace(1) %po, align 16
  br label %exit
exit:
  ret void
}

; row_sum_kernel(const float* x, float* y, int cols): 256 threads, 1 KiB of static LDS
define amdgpu_kernel void @_Z14row_sum_kernelPKfPfi(
    ptr addrspace(1) %x, ptr addrspace(1) %y, i32 %cols) #0 {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %bid = call i32 @llvm.amdgcn.workgroup.id.x()
  %row = mul i32 %bid, %cols
  %i = add i32 %row, %tid
  %k = sext i32 %i to i64
  %px = getelementptr float, ptr addrspace(1) %x, i64 %k
  %v = load float, ptr addrspace(1) %px, align 4
  %slot = getelementptr [256 x float], ptr addrspace(3) @partial, i32 0, i32 %tid
  store float %v, ptr addrspace(3) %slot, align 4
  call void @llvm.amdgcn.s.barrier()
  %other = xor i32 %tid, 1
  %oslot = getelementptr [256 x float], ptr addrspace(3) @partial, i32 0, i32 %other
  %w = load float, ptr addrspace(3) %oslot, align 4
  %sum = fadd float %v, %w
  %py = getelementptr float, ptr addrspace(1) %y, i64 %k
  store float %sum, ptr addrspace(1) %py, align 4
  ret void
}

; mfma_kernel(const half* a, const half* b, float* c): one 32x32x8 MFMA per wavefront
define amdgpu_kernel void @_Z11mfma_kernelPKDF16_S1_Pf(
    ptr addrspace(1) %a, ptr addrspace(1) %b, ptr addrspace(1) %c) #1 {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %k = sext i32 %tid to i64
  %pa = getelementptr <4 x half>, ptr addrspace(1) %a, i64 %k
  %pb = getelementptr <4 x half>, ptr addrspace(1) %b, i64 %k
  %va = load <4 x half>, ptr addrspace(1) %pa, align 8
  %vb = load <4 x half>, ptr addrspace(1) %pb, align 8
  %acc = call <16 x float> @llvm.amdgcn.mfma.f32.32x32x8f16(<4 x half> %va, <4 x half> %vb, <16 x float> zeroinitializer, i32 0, i32 0, i32 0)
  %pc = getelementptr <16 x float>, ptr addrspace(1) %c, i64 %k
  store <16 x float> %acc, ptr addrspace(1) %pc, align 64
  ret void
}

attributes #0 = { "amdgpu-flat-work-group-size"="1,256" }
attributes #1 = { "amdgpu-flat-work-group-size"="1,64" }

!llvm.module.flags = !{!0}
!0 = !{i32 1, !"amdhsa_code_object_version", i32 500}
"""


def main() -> None:
    from triton._C.libtriton import llvm

    llvm.init_targets()
    asm = llvm.translate_to_asm(IR, "amdgcn-amd-amdhsa", "gfx942", "", [], False, False)
    (Path(__file__).parent / "hip_kernels_gfx942.s").write_text(asm)


if __name__ == "__main__":
    main()
