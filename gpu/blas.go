package gpu

import (
	"context"
	"fmt"
	"math"
	"unsafe"
)

// cublasOperation_t values.
const (
	cublasOpN = 0
	cublasOpT = 1
)

// cudaDataType_t, cublasComputeType_t and cublasGemmAlgo_t values for
// cublasGemmEx (library_types.h, cublas_api.h).
const (
	cudaR32F  = 0
	cudaR16F  = 2
	cudaR16BF = 14

	cublasCompute32F         = 68
	cublasCompute32FFastTF32 = 77

	cublasGemmDefault = -1
)

// ProductOptions are the settings of GemmWith and MatMulWith.
type ProductOptions struct {
	// TF32 lets a Float32 product run on the tensor cores with its inputs
	// rounded to TF32 (10 mantissa bits, float32's range) and float32
	// accumulation (cublasGemmEx with CUBLAS_COMPUTE_32F_FAST_TF32): several
	// times faster on a card with tensor cores, with about 3 decimal
	// digits per input instead of 7. It is ignored for other types:
	// Float64 stays exact and the 16-bit types always use tensor cores.
	TF32 bool
}

// dataType returns t's cudaDataType_t.
func dataType(t DType) int32 {
	switch t {
	case BFloat16:
		return cudaR16BF
	case Float16:
		return cudaR16F
	}
	return cudaR32F
}

// Gemm computes C = alpha·op(A)·op(B) + beta·C with cuBLAS on the
// resources' stream, where op(X) is X, or its transpose when transX is
// set. A, B and C are two-dimensional, row-major, of one element type
// (Float32 uses cublasSgemm, Float64 cublasDgemm, BFloat16 and Float16
// cublasGemmEx on the tensor cores with float32 accumulation; C may also
// be Float32 for those) and of these resources; op(A) is m×k, op(B) k×n
// and C m×n. When beta is 0, C is not read. It returns once the product
// is queued. Errors name gemm.
//
// cuBLAS is column-major; a row-major matrix is the column-major storage
// of its transpose, so the product is computed as Cᵀ = op(B)ᵀ·op(A)ᵀ, which
// needs no copies.
func (r *Resources) Gemm(ctx context.Context, transA, transB bool, alpha float64, a, b *Array, beta float64, c *Array) error {
	return opError(OpGemm, r.gemm(ctx, transA, transB, alpha, a, b, beta, c, ProductOptions{}))
}

// GemmWith is Gemm with options (TF32 for a Float32 product).
func (r *Resources) GemmWith(ctx context.Context, opt ProductOptions, transA, transB bool, alpha float64, a, b *Array, beta float64, c *Array) error {
	return opError(OpGemm, r.gemm(ctx, transA, transB, alpha, a, b, beta, c, opt))
}

// MatMul returns a new array C = A·B of A's element type, computed as
// Gemm does, for two-dimensional row-major A (m×k) and B (k×n). Errors name
// matMul.
func (r *Resources) MatMul(ctx context.Context, a, b *Array) (*Array, error) {
	return r.MatMulWith(ctx, ProductOptions{}, a, b)
}

// MatMulWith is MatMul with options (TF32 for a Float32 product).
func (r *Resources) MatMulWith(ctx context.Context, opt ProductOptions, a, b *Array) (*Array, error) {
	if err := r.checkOperands(a, b); err != nil {
		return nil, opError(OpMatMul, err)
	}
	m, n := a.a.shape[0], b.a.shape[1]
	c, err := r.newArrayUninitialized(ctx, a.a.dtype, []int{m, n})
	if err != nil {
		return nil, opError(OpMatMul, err)
	}
	if err := r.gemm(ctx, false, false, 1, a, b, 0, c, opt); err != nil {
		_ = c.Free()
		return nil, opError(OpMatMul, err)
	}
	return c, nil
}

// newArrayUninitialized allocates an array whose contents are left as the
// allocator returns them: only for outputs that are written in full.
func (r *Resources) newArrayUninitialized(ctx context.Context, dtype DType, shape []int) (*Array, error) {
	n, err := shapeSize(shape)
	if err != nil {
		return nil, err
	}
	s := r.s
	a := &arrState{res: s, dtype: dtype, shape: shape, n: n, bytes: uintptr(n) * uintptr(dtype.Size())}
	err = s.onThread(ctx, func() error {
		if a.bytes > 0 {
			if err := s.allocOnThread(a); err != nil {
				return err
			}
		}
		return s.register(a)
	})
	if err != nil {
		return nil, err
	}
	return r.handleFor(a), nil
}

// checkOperands checks that the arrays are two-dimensional, of one element
// type and of these resources.
func (r *Resources) checkOperands(arrays ...*Array) error {
	for i, x := range arrays {
		if x == nil {
			return fmt.Errorf("operand %d is missing", i+1)
		}
		if x.a.res != r.s {
			return fmt.Errorf("%v belongs to other resources", x)
		}
		if len(x.a.shape) != 2 {
			return fmt.Errorf("%v is not two-dimensional", x)
		}
		// C of a 16-bit product may be float32 (the accumulator's type).
		if x.a.dtype != arrays[0].a.dtype && !(i == 2 && arrays[0].a.dtype.half() && x.a.dtype == Float32) {
			return fmt.Errorf("%v and %v differ in element type", arrays[0], x)
		}
		for _, d := range x.a.shape {
			if d > math.MaxInt32 {
				return fmt.Errorf("%v is too large for cuBLAS", x)
			}
		}
	}
	return nil
}

func (r *Resources) gemm(ctx context.Context, transA, transB bool, alpha float64, a, b *Array, beta float64, c *Array, opt ProductOptions) error {
	if err := r.checkOperands(a, b, c); err != nil {
		return err
	}
	ar, ac := a.a.shape[0], a.a.shape[1]
	br, bc := b.a.shape[0], b.a.shape[1]
	m, k := ar, ac
	if transA {
		m, k = ac, ar
	}
	k2, n := br, bc
	if transB {
		k2, n = bc, br
	}
	if k != k2 || c.a.shape[0] != m || c.a.shape[1] != n {
		return fmt.Errorf("shapes do not match: op(A) is %d×%d, op(B) %d×%d, C %v", m, k, k2, n, c.a.shape)
	}
	if m == 0 || n == 0 {
		return nil
	}
	op := func(t bool) int32 {
		if t {
			return cublasOpT
		}
		return cublasOpN
	}
	s := r.s
	blas := &s.drv.libs.blas
	// On the caller's thread: a product of small matrices, or a fast one
	// (bf16 at n = 4096 takes about 0.2 ms on an H200), would otherwise
	// pay a round trip through the device thread of tens of microseconds.
	return s.withHandleDirect(ctx, CUBLAS, func(h uintptr) error {
		pa, err := s.ptrOnThread(a)
		if err != nil {
			return err
		}
		pb, err := s.ptrOnThread(b)
		if err != nil {
			return err
		}
		pc, err := s.ptrOnThread(c)
		if err != nil {
			return err
		}
		// Column-major: C(n×m) = op(B)(n×k) · op(A)(k×m); each leading
		// dimension is the row length of the row-major matrix.
		lda, ldb, ldc := int32(max(ac, 1)), int32(max(bc, 1)), int32(n)
		dt := a.a.dtype
		if dt.half() || (dt == Float32 && opt.TF32) {
			if blas.gemmEx == nil {
				return fmt.Errorf("%s has no cublasGemmEx, which %v products need", s.drv.LibraryPath(CUBLAS), dt)
			}
			compute := int32(cublasCompute32F)
			if !dt.half() {
				compute = cublasCompute32FFastTF32
			}
			al, be := float32(alpha), float32(beta)
			return libCheck(CUBLAS, "cublasGemmEx", blas.gemmEx(h, op(transB), op(transA), int32(n), int32(m), int32(k),
				unsafe.Pointer(&al), pb, dataType(dt), ldb, pa, dataType(dt), lda,
				unsafe.Pointer(&be), pc, dataType(c.a.dtype), ldc, compute, cublasGemmDefault))
		}
		if dt == Float32 {
			al, be := float32(alpha), float32(beta)
			return libCheck(CUBLAS, "cublasSgemm_v2", blas.sgemm(h, op(transB), op(transA), int32(n), int32(m), int32(k),
				&al, pb, ldb, pa, lda, &be, pc, ldc))
		}
		al, be := alpha, beta
		return libCheck(CUBLAS, "cublasDgemm_v2", blas.dgemm(h, op(transB), op(transA), int32(n), int32(m), int32(k),
			&al, pb, ldb, pa, lda, &be, pc, ldc))
	})
}
