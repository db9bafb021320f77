package gpu

import (
	"context"
	"fmt"
)

// convertSource holds the conversion kernels between float32 and the
// 16-bit types, one element per thread in a grid-stride loop. They need no
// header (NVRTC has no cuda_bf16.h of its own): bfloat16 is the top half
// of a float32's bits, rounded to nearest even by adding 0x7fff plus the
// lowest kept bit (a NaN is kept quiet instead, since the carry could turn
// it into an infinity); IEEE half uses the PTX conversions (cvt.rn.f16.f32
// rounds to nearest even, cvt.f32.f16 is exact), which every architecture
// since sm_53 has.
const convertSource = `#define RIOT_GRID_STRIDE(i, n) \
	for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
	     i += (long long)gridDim.x * blockDim.x)

extern "C" __global__ void riot_f32_to_bf16(const unsigned int* in, unsigned short* out, long long n) {
	RIOT_GRID_STRIDE(i, n) {
		unsigned int u = in[i];
		if ((u & 0x7fffffffu) > 0x7f800000u) out[i] = (unsigned short)((u >> 16) | 0x40u);
		else out[i] = (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
	}
}

extern "C" __global__ void riot_bf16_to_f32(const unsigned short* in, unsigned int* out, long long n) {
	RIOT_GRID_STRIDE(i, n) { out[i] = (unsigned int)in[i] << 16; }
}

extern "C" __global__ void riot_f32_to_f16(const float* in, unsigned short* out, long long n) {
	RIOT_GRID_STRIDE(i, n) {
		unsigned short h;
		asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(in[i]));
		out[i] = h;
	}
}

extern "C" __global__ void riot_f16_to_f32(const unsigned short* in, float* out, long long n) {
	RIOT_GRID_STRIDE(i, n) {
		float f;
		asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(in[i]));
		out[i] = f;
	}
}
`

// convertKernel returns the kernel converting float32 to t (toHalf) or t
// to float32.
func convertKernel(t DType, toHalf bool) Kernel {
	name := map[DType]string{BFloat16: "bf16", Float16: "f16"}[t]
	if toHalf {
		name = "riot_f32_to_" + name
	} else {
		name = "riot_" + name + "_to_f32"
	}
	return Kernel{Source: convertSource, Name: name}
}

// convertLaunch is the launch shape of a conversion of n elements: 256
// threads a block, at most 4096 blocks (the loop covers the rest).
func convertLaunch(n int) LaunchConfig {
	blocks := min((n+255)/256, 4096)
	return LaunchConfig{Grid: Dim3{X: uint32(max(blocks, 1))}, Block: Dim3{X: 256}}
}

// fromFloat32 fills the 16-bit array x from data: data goes up into a
// temporary float32 array, which a kernel converts into x; the temporary
// is freed in stream order.
func (r *Resources) fromFloat32(ctx context.Context, x *Array, data []float32) error {
	if x.a.n == 0 {
		return nil
	}
	tmp, err := NewArray(ctx, r, data)
	if err != nil {
		return err
	}
	defer func() { _ = tmp.Free() }()
	return r.convert(ctx, tmp, x, x.a.dtype, true)
}

// toFloat32 copies the 16-bit array x into dst as float32: a kernel
// converts x into a temporary float32 array, which is copied down.
func (r *Resources) toFloat32(ctx context.Context, x *Array, dst []float32) error {
	if err := checkLive(x.a.res, x); err != nil {
		return err
	}
	if x.a.n == 0 {
		return nil
	}
	tmp, err := r.newArrayUninitialized(ctx, Float32, []int{x.a.n})
	if err != nil {
		return err
	}
	defer func() { _ = tmp.Free() }()
	if err := r.convert(ctx, x, tmp, x.a.dtype, false); err != nil {
		return err
	}
	return copyToHost(ctx, tmp, asBytes(dst))
}

// convert launches the conversion of in into out, of as many elements.
func (r *Resources) convert(ctx context.Context, in, out *Array, t DType, toHalf bool) error {
	if err := r.launch(ctx, convertKernel(t, toHalf), convertLaunch(in.a.n), []any{in, out, int64(in.a.n)}); err != nil {
		return fmt.Errorf("converting between float32 and %v: %w", t, err)
	}
	return nil
}
