package gpu_test

import (
	"context"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/gpu"
)

// refRound is the reference for the conversions: x rounded to nearest,
// ties to even, in a binary format of p significand bits (the leading one
// included) and exponents emin..emax, with its subnormals, and overflow to
// infinity. It scales by powers of two in float64, where that is exact,
// unlike the bit manipulation of the kernels and of the fake.
func refRound(x float32, p, emin, emax int) float32 {
	v := float64(x)
	if math.IsNaN(v) || math.IsInf(v, 0) || v == 0 {
		return x
	}
	_, exp := math.Frexp(math.Abs(v)) // |v| = frac·2^exp, frac in [0.5, 1)
	e := max(exp-1, emin)
	q := math.Ldexp(1, e-(p-1)) // the spacing of the format's numbers near v
	r := math.RoundToEven(math.Abs(v)/q) * q
	if r > math.Ldexp(2-math.Ldexp(1, 1-p), emax) {
		r = math.Inf(1)
	}
	return float32(math.Copysign(r, v))
}

func refBF16(x float32) float32 { return refRound(x, 8, -126, 127) }
func refF16(x float32) float32  { return refRound(x, 11, -14, 15) }

// conversionInputs are edge cases of both formats and random values over
// the whole float32 range.
func conversionInputs() []float32 {
	f := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 0.1, 1.0 / 3, 65504, 65519.99, 65520, -65520, 70000,
		6.1035156e-05, 5.9604645e-08, 2.9802322e-08, 2.9802326e-08, 1e-8, 1e-40, -1e-45,
		math.MaxFloat32, -math.MaxFloat32, math.SmallestNonzeroFloat32,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()),
		1 + 1.0/256, 1 + 3.0/256, 1 + 1.0/2048, 1 + 3.0/2048, // ties of bf16 and f16
		3.3895314e38, 3.4028235e38, // near bf16's largest
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for range 5000 {
		f = append(f, math.Float32frombits(rng.Uint32()))
	}
	for range 2000 {
		f = append(f, float32((rng.Float64()*2-1)*math.Pow(2, rng.Float64()*40-25)))
	}
	return f
}

// checkConverted asserts that got is the reference's rounding of in.
func checkConverted(t *testing.T, dtype gpu.DType, in, got []float32) {
	t.Helper()
	ref := refBF16
	if dtype == gpu.Float16 {
		ref = refF16
	}
	bad := 0
	for i, x := range in {
		want := ref(x)
		if math.IsNaN(float64(want)) {
			if !math.IsNaN(float64(got[i])) {
				t.Errorf("%v: %g (%#08x) gave %g, want NaN", dtype, x, math.Float32bits(x), got[i])
				bad++
			}
			continue
		}
		if math.Float32bits(got[i]) != math.Float32bits(want) {
			t.Errorf("%v: %g (%#08x) gave %g (%#08x), want %g (%#08x)", dtype, x, math.Float32bits(x),
				got[i], math.Float32bits(got[i]), want, math.Float32bits(want))
			bad++
		}
		if bad > 10 {
			t.FailNow()
		}
	}
}

func TestRefRound(t *testing.T) {
	t.Parallel()
	// The reference itself, on values whose roundings are known.
	assert.Equal(t, float32(1), refBF16(1+1.0/256), "a tie goes to the even neighbour")
	assert.Equal(t, float32(1+2.0/128), refBF16(1+3.0/256))
	assert.Equal(t, float32(65504), refF16(65519.99))
	assert.True(t, math.IsInf(float64(refF16(65520)), 1))
	assert.Equal(t, float32(5.9604645e-08), refF16(5.9604645e-08), "the smallest subnormal half")
	assert.Equal(t, float32(0), refF16(2.9802322e-08), "half of it is a tie, to zero")
	assert.Equal(t, float32(5.9604645e-08), refF16(2.9802326e-08))
	assert.True(t, math.Signbit(float64(refF16(-1e-45))))
	assert.True(t, math.IsInf(float64(refBF16(math.MaxFloat32)), 1))
}

func TestHalf_Conversions(t *testing.T) {
	t.Parallel()
	f := newFakeCUDA(t)
	r := f.resources(t)
	ctx := context.Background()
	in := conversionInputs()
	// The arrays are kept to the end: one the GC collects is freed by
	// its cleanup, which the live_allocs count below would miss.
	var keep []*gpu.Array
	for _, dtype := range []gpu.DType{gpu.BFloat16, gpu.Float16} {
		x, err := gpu.NewArrayOf(ctx, r, dtype, in)
		require.NoError(t, err)
		assert.Equal(t, dtype, x.DType())
		assert.Equal(t, "gpu.Array("+dtype.String()+" ["+itoa(len(in))+"] on device 0)", x.String())
		got := make([]float32, len(in))
		require.NoError(t, gpu.CopyToHost(ctx, x, got))
		checkConverted(t, dtype, in, got)

		// Filled again from the host, and read back once more: a
		// 16-bit value converts to float32 exactly and back unchanged.
		require.NoError(t, gpu.CopyFromHost(ctx, x, got))
		again := make([]float32, len(in))
		require.NoError(t, gpu.CopyToHost(ctx, x, again))
		checkConverted(t, dtype, got, again)

		z := noErr[*gpu.Array](t)(r.Zeros(ctx, dtype, 3))
		zs := []float32{9, 9, 9}
		require.NoError(t, gpu.CopyToHost(ctx, z, zs))
		assert.Equal(t, []float32{0, 0, 0}, zs)
		keep = append(keep, x, z)
	}
	assert.EqualValues(t, 10, f.counter(t, "conversions"), "5 a type: up, down, up, down, and the zeros down")
	assert.EqualValues(t, 4, f.counter(t, "live_allocs"), "the temporaries are freed: the arrays and the zeros are left")
	assert.EqualValues(t, 1, f.counter(t, "compiles"), "one program for the four kernels")
	runtime.KeepAlive(keep)
}

func itoa(n int) string {
	s := ""
	for {
		s = string(rune('0'+n%10)) + s
		if n /= 10; n == 0 {
			return s
		}
	}
}

func TestHalf_Errors(t *testing.T) {
	t.Parallel()
	f := newFakeCUDA(t)
	r := f.resources(t)
	ctx := context.Background()
	_, err := gpu.NewArrayOf(ctx, r, gpu.Float64, []float32{1})
	requireKind(t, err, gpu.OpDeviceArray, gpu.Logic)
	assert.EqualError(t, err, "deviceArray: float64 cannot be made from float32 data")
	x := noErr[*gpu.Array](t)(gpu.NewArrayOf(ctx, r, gpu.BFloat16, []float32{1, 2}))
	err = gpu.CopyToHost(ctx, x, make([]float64, 2))
	requireKind(t, err, gpu.OpArrayToHost, gpu.Logic)
	assert.EqualError(t, err, "arrayToHost: gpu.Array(bf16 [2] on device 0) cannot be copied into float64 elements")
	y := noErr[*gpu.Array](t)(gpu.NewArrayOf(ctx, r, gpu.Float16, []float32{1, 2}, 1, 2))
	xx := noErr[*gpu.Array](t)(gpu.NewArrayOf(ctx, r, gpu.BFloat16, []float32{1, 2}, 2, 1))
	_, err = r.MatMul(ctx, xx, y)
	requireKind(t, err, gpu.OpMatMul, gpu.Logic)
	assert.Contains(t, err.Error(), "differ in element type")
	require.NoError(t, x.Free())
	err = gpu.CopyToHost(ctx, x, make([]float32, 2))
	assert.EqualError(t, err, "arrayToHost: array freed")
}

func TestHalf_MatMul(t *testing.T) {
	t.Parallel()
	f := newFakeCUDA(t)
	r := f.resources(t)
	ctx := context.Background()
	const m, k, n = 5, 7, 3
	a, b := randomFloats(20, m*k), randomFloats(21, k*n)
	for _, dtype := range []gpu.DType{gpu.BFloat16, gpu.Float16} {
		ref := refBF16
		if dtype == gpu.Float16 {
			ref = refF16
		}
		x := noErr[*gpu.Array](t)(gpu.NewArrayOf(ctx, r, dtype, a, m, k))
		y := noErr[*gpu.Array](t)(gpu.NewArrayOf(ctx, r, dtype, b, k, n))
		c, err := r.MatMul(ctx, x, y)
		require.NoError(t, err)
		assert.Equal(t, dtype, c.DType())
		assert.Equal(t, []int{m, n}, c.Shape())
		got := make([]float32, m*n)
		require.NoError(t, gpu.CopyToHost(ctx, c, got))

		// Into a float32 C, with beta: C = 2·A·B + 1·C.
		c32 := noErr[*gpu.Array](t)(gpu.NewArray(ctx, r, make([]float32, m*n), m, n))
		require.NoError(t, gpu.CopyFromHost(ctx, c32, got))
		require.NoError(t, r.Gemm(ctx, false, false, 2, x, y, 1, c32))
		got32 := make([]float32, m*n)
		require.NoError(t, gpu.CopyToHost(ctx, c32, got32))

		for i := range m {
			for j := range n {
				var sum float64
				for l := range k {
					sum += float64(ref(a[i*k+l])) * float64(ref(b[l*n+j]))
				}
				// Rounded inputs, exact products, float32 sums: within
				// one unit of the 16-bit result's last place.
				ulp := math.Abs(sum) * math.Ldexp(1, -7)
				if dtype == gpu.Float16 {
					ulp = math.Abs(sum) * math.Ldexp(1, -10)
				}
				assert.InDelta(t, sum, got[i*n+j], ulp+1e-6, "%v C[%d][%d]", dtype, i, j)
				// The float32 C is not rounded to 16 bits.
				assert.InDelta(t, 2*sum+float64(got[i*n+j]), got32[i*n+j], 1e-5, "%v float32 C[%d][%d]", dtype, i, j)
			}
		}
	}
	assert.EqualValues(t, 4, f.counter(t, "gemm_ex"))
	assert.EqualValues(t, 68, f.counter(t, "gemm_ex_compute"), "CUBLAS_COMPUTE_32F")
	assert.Zero(t, f.counter(t, "gemms"), "no cublasSgemm")
}

func TestTF32_MatMul(t *testing.T) {
	t.Parallel()
	f := newFakeCUDA(t)
	r := f.resources(t)
	ctx := context.Background()
	x := noErr[*gpu.Array](t)(gpu.NewArray(ctx, r, []float32{1, 2, 3, 4}, 2, 2))
	c, err := r.MatMulWith(ctx, gpu.ProductOptions{TF32: true}, x, x)
	require.NoError(t, err)
	got := make([]float32, 4)
	require.NoError(t, gpu.CopyToHost(ctx, c, got))
	assert.Equal(t, []float32{7, 10, 15, 22}, got)
	assert.EqualValues(t, 77, f.counter(t, "gemm_ex_compute"), "CUBLAS_COMPUTE_32F_FAST_TF32")
	_, err = r.MatMul(ctx, x, x)
	require.NoError(t, err)
	assert.EqualValues(t, 1, f.counter(t, "gemms"), "without TF32: cublasSgemm")
	assert.EqualValues(t, 1, f.counter(t, "gemm_ex"))

	// TF32 means nothing to float64: cublasDgemm.
	d := noErr[*gpu.Array](t)(gpu.NewArray(ctx, r, []float64{1, 2, 3, 4}, 2, 2))
	require.NoError(t, r.GemmWith(ctx, gpu.ProductOptions{TF32: true}, false, false, 1, d, d, 0, d))
	assert.EqualValues(t, 1, f.counter(t, "gemm_ex"))
}
