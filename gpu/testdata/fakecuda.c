/*
 * fakecuda.c: a FAKE of the few CUDA driver, cuBLAS, cuSOLVER, cuSPARSE and
 * NVRTC entry points that riot's gpu package binds, for its tests on hosts
 * without a GPU. It is a test double, built by the tests with gcc into a
 * temporary directory and loaded in place of the real libraries. It is never
 * shipped and it is not CUDA: "device" memory is host memory, "kernels" are a
 * few C functions chosen by name, and "PTX" is the kernel source with a
 * header.
 *
 * Behaviour the tests rely on:
 *   - every entry point has the signature of the real one;
 *   - calls that need a context fail with CUDA_ERROR_INVALID_CONTEXT unless the
 *     calling thread made a retained primary context current, so a binding
 *     that calls from the wrong thread fails loudly;
 *   - a stream answers CUDA_ERROR_NOT_READY to cuStreamQuery `not_ready` times
 *     after each operation queued on it, then CUDA_SUCCESS; the kernel "spin"
 *     makes it answer CUDA_ERROR_NOT_READY forever;
 *   - allocations above `oom_bytes` fail with CUDA_ERROR_OUT_OF_MEMORY;
 *   - copies and kernels check that device pointers fall inside live
 *     allocations; a kernel that does not fails its stream with
 *     CUDA_ERROR_ILLEGAL_ADDRESS, reported by the next cuStreamQuery;
 *   - a copy between device memory and page-locked host memory (from
 *     cuMemHostAlloc) is asynchronous, as a DMA is: it is only queued, and runs
 *     when the stream's work is seen to be done (cuStreamQuery answering
 *     CUDA_SUCCESS, or cuEventQuery on an event recorded after it) or before
 *     any other operation on the stream; so a binding that reuses a staging
 *     buffer before its copy is done, or reads one too early, gets wrong data;
 *   - an event answers CUDA_ERROR_NOT_READY to cuEventQuery `event_not_ready`
 *     times after each cuEventRecord (forever when the stream spins);
 *   - the conversion kernels riot_f32_to_bf16, riot_bf16_to_f32,
 *     riot_f32_to_f16 and riot_f16_to_f32 convert in C, with rounding to
 *     nearest even, and cublasGemmEx multiplies bf16, f16 and f32 matrices
 *     with float accumulation.
 *
 * Settings: read from the environment at the first cuInit (FAKECUDA_DEVICE_COUNT,
 * FAKECUDA_OOM_BYTES, FAKECUDA_NOT_READY, FAKECUDA_POOLS) and changed at any
 * time with fakecuda_set(key, value). Counters are read with fakecuda_get(key).
 * Each copy of the built library file has its own state, so tests that run in
 * parallel each load their own copy.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;

enum {
	CUDA_SUCCESS = 0,
	CUDA_ERROR_INVALID_VALUE = 1,
	CUDA_ERROR_OUT_OF_MEMORY = 2,
	CUDA_ERROR_NOT_INITIALIZED = 3,
	CUDA_ERROR_NO_DEVICE = 100,
	CUDA_ERROR_INVALID_DEVICE = 101,
	CUDA_ERROR_INVALID_CONTEXT = 201,
	CUDA_ERROR_INVALID_HANDLE = 400,
	CUDA_ERROR_NOT_FOUND = 500,
	CUDA_ERROR_NOT_READY = 600,
	CUDA_ERROR_ILLEGAL_ADDRESS = 700,
};

#define MAX_DEVICES 8
#define CTX_MAGIC 0x63747866 /* "fxtc" */
#define STREAM_MAGIC 0x73747266

struct fake_ctx {
	int magic;
	int device;
	int refs;
};

struct fake_stream {
	int magic;
	struct fake_ctx *ctx;
	long long pending; /* NOT_READY answers left; -1: forever */
	int error;         /* sticky error reported by cuStreamQuery */
	long long seq;     /* asynchronous copies queued so far */
	struct fake_copy *copies, *last; /* queued, not yet run */
	struct fake_stream *next;
};

/* fake_copy is an asynchronous copy to or from page-locked memory. */
struct fake_copy {
	void *dst;
	const void *src;
	size_t n;
	long long seq;
	struct fake_copy *next;
};

#define EVENT_MAGIC 0x65767466

struct fake_event {
	int magic;
	struct fake_stream *stream; /* NULL until recorded */
	long long seq;              /* the copies queued before the record */
	long long pending;          /* NOT_READY answers left; -1: forever */
	struct fake_event *next;
};

struct fake_host {
	unsigned char *p;
	size_t n;
	struct fake_host *next;
};

struct fake_alloc {
	unsigned char *p;
	size_t n;
	struct fake_alloc *next;
};

struct fake_module {
	char *image;
	struct fake_module *next;
};

struct fake_func {
	char name[64];
	struct fake_module *mod;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int env_read;
static int initialized;

/* settings */
static long long device_count = 1;
static long long oom_bytes = 1LL << 30;
static long long not_ready = 3;
static long long pools = 1;
static long long blas_alloc_fail;
static long long nvrtc_oom;
static long long nvrtc_max_sm = 1000; /* sm_XY above this: NVRTC_ERROR_INVALID_OPTION */
static long long nvrtc_cubin = 1;     /* export nvrtcGetCUBIN's answers (0: size 0) */

/* counters */
static long long live_allocs, live_streams, live_modules;
static long long stream_queries, launches, compiles, module_loads;
static long long blas_handles, solver_handles, sparse_handles;
static long long blas_stream_sets, gemms, memsets;
static long long async_allocs, sync_allocs;
static long long cubin_loads;
static long long event_not_ready = 2;
static long long host_oom_bytes = 1LL << 30; /* page-locked memory in all */
static long long live_host_allocs, host_alloc_bytes, host_allocs, live_events;
static long long pinned_copies, pageable_copies, event_queries, bad_host_frees;
static long long gemm_ex, gemm_ex_compute;
static long long conversions;

static struct fake_ctx ctxs[MAX_DEVICES];
static struct fake_stream *streams;
static struct fake_alloc *allocs;
static struct fake_module *modules;
static struct fake_event *events;
static struct fake_host *hosts;
static __thread struct fake_ctx *current;

static long long env_ll(const char *name, long long def) {
	const char *v = getenv(name);
	if (v == NULL || *v == 0)
		return def;
	return atoll(v);
}

static void read_env_locked(void) {
	if (env_read)
		return;
	env_read = 1;
	device_count = env_ll("FAKECUDA_DEVICE_COUNT", device_count);
	oom_bytes = env_ll("FAKECUDA_OOM_BYTES", oom_bytes);
	not_ready = env_ll("FAKECUDA_NOT_READY", not_ready);
	pools = env_ll("FAKECUDA_POOLS", pools);
	if (device_count > MAX_DEVICES)
		device_count = MAX_DEVICES;
}

static long long *setting(const char *key) {
	if (strcmp(key, "device_count") == 0) return &device_count;
	if (strcmp(key, "oom_bytes") == 0) return &oom_bytes;
	if (strcmp(key, "not_ready") == 0) return &not_ready;
	if (strcmp(key, "pools") == 0) return &pools;
	if (strcmp(key, "blas_alloc_fail") == 0) return &blas_alloc_fail;
	if (strcmp(key, "nvrtc_oom") == 0) return &nvrtc_oom;
	if (strcmp(key, "nvrtc_max_sm") == 0) return &nvrtc_max_sm;
	if (strcmp(key, "nvrtc_cubin") == 0) return &nvrtc_cubin;
	if (strcmp(key, "cubin_loads") == 0) return &cubin_loads;
	if (strcmp(key, "live_allocs") == 0) return &live_allocs;
	if (strcmp(key, "live_streams") == 0) return &live_streams;
	if (strcmp(key, "live_modules") == 0) return &live_modules;
	if (strcmp(key, "stream_queries") == 0) return &stream_queries;
	if (strcmp(key, "launches") == 0) return &launches;
	if (strcmp(key, "compiles") == 0) return &compiles;
	if (strcmp(key, "module_loads") == 0) return &module_loads;
	if (strcmp(key, "blas_handles") == 0) return &blas_handles;
	if (strcmp(key, "solver_handles") == 0) return &solver_handles;
	if (strcmp(key, "sparse_handles") == 0) return &sparse_handles;
	if (strcmp(key, "blas_stream_sets") == 0) return &blas_stream_sets;
	if (strcmp(key, "gemms") == 0) return &gemms;
	if (strcmp(key, "memsets") == 0) return &memsets;
	if (strcmp(key, "async_allocs") == 0) return &async_allocs;
	if (strcmp(key, "sync_allocs") == 0) return &sync_allocs;
	if (strcmp(key, "event_not_ready") == 0) return &event_not_ready;
	if (strcmp(key, "host_oom_bytes") == 0) return &host_oom_bytes;
	if (strcmp(key, "live_host_allocs") == 0) return &live_host_allocs;
	if (strcmp(key, "host_alloc_bytes") == 0) return &host_alloc_bytes;
	if (strcmp(key, "host_allocs") == 0) return &host_allocs;
	if (strcmp(key, "live_events") == 0) return &live_events;
	if (strcmp(key, "pinned_copies") == 0) return &pinned_copies;
	if (strcmp(key, "pageable_copies") == 0) return &pageable_copies;
	if (strcmp(key, "event_queries") == 0) return &event_queries;
	if (strcmp(key, "bad_host_frees") == 0) return &bad_host_frees;
	if (strcmp(key, "gemm_ex") == 0) return &gemm_ex;
	if (strcmp(key, "gemm_ex_compute") == 0) return &gemm_ex_compute;
	if (strcmp(key, "conversions") == 0) return &conversions;
	return NULL;
}

/* fakecuda_set changes a setting; it returns 0, or -1 for an unknown key. */
int fakecuda_set(const char *key, long long value) {
	pthread_mutex_lock(&mu);
	read_env_locked();
	long long *p = setting(key);
	if (p != NULL)
		*p = value;
	pthread_mutex_unlock(&mu);
	return p == NULL ? -1 : 0;
}

/* fakecuda_get reads a setting or counter; "ctx_refs0".."ctx_refs7" read a
 * device's primary context references. It returns -1 for an unknown key. */
long long fakecuda_get(const char *key) {
	long long v = -1;
	pthread_mutex_lock(&mu);
	if (strncmp(key, "ctx_refs", 8) == 0 && key[8] >= '0' && key[8] < '0' + MAX_DEVICES) {
		v = ctxs[key[8] - '0'].refs;
	} else {
		long long *p = setting(key);
		if (p != NULL)
			v = *p;
	}
	pthread_mutex_unlock(&mu);
	return v;
}

/* ---- helpers; callers hold mu ---- */

static CUresult need_ctx_locked(void) {
	if (!initialized)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (current == NULL || current->magic != CTX_MAGIC || current->refs <= 0)
		return CUDA_ERROR_INVALID_CONTEXT;
	return CUDA_SUCCESS;
}

static struct fake_stream *find_stream_locked(void *h) {
	for (struct fake_stream *s = streams; s != NULL; s = s->next)
		if ((void *)s == h && s->magic == STREAM_MAGIC)
			return s;
	return NULL;
}

static CUresult need_stream_locked(void *h, struct fake_stream **out) {
	CUresult r = need_ctx_locked();
	if (r != CUDA_SUCCESS)
		return r;
	struct fake_stream *s = find_stream_locked(h);
	if (s == NULL)
		return CUDA_ERROR_INVALID_HANDLE;
	if (s->ctx != current)
		return CUDA_ERROR_INVALID_CONTEXT;
	*out = s;
	return CUDA_SUCCESS;
}

static void queued_locked(struct fake_stream *s) {
	if (s->pending >= 0)
		s->pending = not_ready;
}

/* run_copies_locked runs the stream's queued copies numbered below seq. */
static void run_copies_locked(struct fake_stream *s, long long seq) {
	while (s->copies != NULL && s->copies->seq < seq) {
		struct fake_copy *c = s->copies;
		memcpy(c->dst, c->src, c->n);
		s->copies = c->next;
		if (s->copies == NULL)
			s->last = NULL;
		free(c);
	}
}

/* flush_locked runs every queued copy of the stream: the stream's next
 * operation comes after them. */
static void flush_locked(struct fake_stream *s) { run_copies_locked(s, s->seq + 1); }

static void flush_all_locked(void) {
	for (struct fake_stream *s = streams; s != NULL; s = s->next)
		flush_locked(s);
}

/* pinned_locked reports whether [p, p+n) lies in one page-locked allocation. */
static int pinned_locked(const void *p, size_t n) {
	for (struct fake_host *h = hosts; h != NULL; h = h->next)
		if ((const unsigned char *)p >= h->p && (const unsigned char *)p + n <= h->p + h->n)
			return 1;
	return 0;
}

static void defer_copy_locked(struct fake_stream *s, void *dst, const void *src, size_t n) {
	struct fake_copy *c = calloc(1, sizeof *c);
	c->dst = dst;
	c->src = src;
	c->n = n;
	c->seq = ++s->seq;
	if (s->last != NULL)
		s->last->next = c;
	else
		s->copies = c;
	s->last = c;
	pinned_copies++;
}

/* inside_locked reports whether [p, p+n) lies in one live allocation. */
static int inside_locked(CUdeviceptr p, size_t n) {
	for (struct fake_alloc *a = allocs; a != NULL; a = a->next) {
		CUdeviceptr lo = (CUdeviceptr)(uintptr_t)a->p;
		if (p >= lo && p + n <= lo + a->n)
			return 1;
	}
	return 0;
}

static CUresult alloc_locked(CUdeviceptr *dptr, size_t n) {
	if (dptr == NULL || n == 0)
		return CUDA_ERROR_INVALID_VALUE;
	if ((long long)n > oom_bytes)
		return CUDA_ERROR_OUT_OF_MEMORY;
	struct fake_alloc *a = calloc(1, sizeof *a);
	a->p = calloc(1, n);
	a->n = n;
	a->next = allocs;
	allocs = a;
	live_allocs++;
	*dptr = (CUdeviceptr)(uintptr_t)a->p;
	return CUDA_SUCCESS;
}

static CUresult free_locked(CUdeviceptr p) {
	for (struct fake_alloc **pp = &allocs; *pp != NULL; pp = &(*pp)->next) {
		struct fake_alloc *a = *pp;
		if ((CUdeviceptr)(uintptr_t)a->p == p) {
			*pp = a->next;
			free(a->p);
			free(a);
			live_allocs--;
			return CUDA_SUCCESS;
		}
	}
	return CUDA_ERROR_INVALID_VALUE;
}

/* ---- driver API ---- */

CUresult cuInit(unsigned int flags) {
	pthread_mutex_lock(&mu);
	read_env_locked();
	initialized = 1;
	CUresult r = (flags != 0) ? CUDA_ERROR_INVALID_VALUE
	             : device_count <= 0 ? CUDA_ERROR_NO_DEVICE
	                                 : CUDA_SUCCESS;
	pthread_mutex_unlock(&mu);
	return r;
}

CUresult cuDriverGetVersion(int *v) {
	if (v == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	*v = 13000;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *n) {
	pthread_mutex_lock(&mu);
	CUresult r = initialized ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
	if (r == CUDA_SUCCESS)
		*n = (int)device_count;
	pthread_mutex_unlock(&mu);
	return r;
}

static CUresult valid_device(int d) {
	if (!initialized)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (d < 0 || d >= device_count)
		return CUDA_ERROR_INVALID_DEVICE;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *dev, int ordinal) {
	pthread_mutex_lock(&mu);
	CUresult r = valid_device(ordinal);
	if (r == CUDA_SUCCESS)
		*dev = ordinal;
	pthread_mutex_unlock(&mu);
	return r;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice dev) {
	pthread_mutex_lock(&mu);
	CUresult r = valid_device(dev);
	if (r == CUDA_SUCCESS)
		snprintf(name, (size_t)len, "Fake Device %d", dev);
	pthread_mutex_unlock(&mu);
	return r;
}

CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev) {
	pthread_mutex_lock(&mu);
	CUresult r = valid_device(dev);
	if (r == CUDA_SUCCESS)
		*bytes = (size_t)oom_bytes;
	pthread_mutex_unlock(&mu);
	return r;
}

CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice dev) {
	pthread_mutex_lock(&mu);
	CUresult r = valid_device(dev);
	if (r == CUDA_SUCCESS) {
		switch (attr) {
		case 75: *v = 9; break;           /* compute capability major */
		case 76: *v = 0; break;           /* compute capability minor */
		case 115: *v = (int)pools; break; /* memory pools supported */
		default: r = CUDA_ERROR_INVALID_VALUE;
		}
	}
	pthread_mutex_unlock(&mu);
	return r;
}

CUresult cuDevicePrimaryCtxRetain(void **pctx, CUdevice dev) {
	pthread_mutex_lock(&mu);
	CUresult r = valid_device(dev);
	if (r == CUDA_SUCCESS) {
		ctxs[dev].magic = CTX_MAGIC;
		ctxs[dev].device = dev;
		ctxs[dev].refs++;
		*pctx = &ctxs[dev];
	}
	pthread_mutex_unlock(&mu);
	return r;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
	pthread_mutex_lock(&mu);
	CUresult r = valid_device(dev);
	if (r == CUDA_SUCCESS) {
		if (ctxs[dev].refs <= 0)
			r = CUDA_ERROR_INVALID_CONTEXT;
		else
			ctxs[dev].refs--;
	}
	pthread_mutex_unlock(&mu);
	return r;
}

CUresult cuCtxSetCurrent(void *ctx) {
	pthread_mutex_lock(&mu);
	CUresult r = initialized ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
	if (r == CUDA_SUCCESS) {
		struct fake_ctx *c = ctx;
		if (c != NULL && (c->magic != CTX_MAGIC || c->refs <= 0))
			r = CUDA_ERROR_INVALID_CONTEXT;
		else
			current = c;
	}
	pthread_mutex_unlock(&mu);
	return r;
}

CUresult cuStreamCreate(void **ph, unsigned int flags) {
	pthread_mutex_lock(&mu);
	CUresult r = need_ctx_locked();
	if (r == CUDA_SUCCESS && flags != 1) /* the binding asks for CU_STREAM_NON_BLOCKING */
		r = CUDA_ERROR_INVALID_VALUE;
	if (r == CUDA_SUCCESS) {
		struct fake_stream *s = calloc(1, sizeof *s);
		s->magic = STREAM_MAGIC;
		s->ctx = current;
		s->next = streams;
		streams = s;
		live_streams++;
		*ph = s;
	}
	pthread_mutex_unlock(&mu);
	return r;
}

CUresult cuStreamQuery(void *h) {
	pthread_mutex_lock(&mu);
	struct fake_stream *s = NULL;
	CUresult r = need_stream_locked(h, &s);
	if (r == CUDA_SUCCESS) {
		stream_queries++;
		if (s->error != 0)
			r = s->error;
		else if (s->pending != 0) {
			if (s->pending > 0)
				s->pending--;
			r = CUDA_ERROR_NOT_READY;
		} else
			flush_locked(s);
	}
	pthread_mutex_unlock(&mu);
	return r;
}

CUresult cuStreamDestroy_v2(void *h) {
	pthread_mutex_lock(&mu);
	struct fake_stream *s = NULL;
	CUresult r = need_stream_locked(h, &s);
	if (r == CUDA_SUCCESS) {
		flush_locked(s); /* queued work runs to its end */
		for (struct fake_event *e = events; e != NULL; e = e->next)
			if (e->stream == s)
				e->stream = NULL;
		for (struct fake_stream **pp = &streams; *pp != NULL; pp = &(*pp)->next) {
			if (*pp == s) {
				*pp = s->next;
				break;
			}
		}
		s->magic = 0;
		free(s);
		live_streams--;
	}
	pthread_mutex_unlock(&mu);
	return r;
}

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t n) {
	pthread_mutex_lock(&mu);
	CUresult r = need_ctx_locked();
	if (r == CUDA_SUCCESS)
		r = alloc_locked(dptr, n);
	if (r == CUDA_SUCCESS)
		sync_allocs++;
	pthread_mutex_unlock(&mu);
	return r;
}

CUresult cuMemFree_v2(CUdeviceptr p) {
	pthread_mutex_lock(&mu);
	CUresult r = need_ctx_locked();
	if (r == CUDA_SUCCESS) {
		flush_all_locked(); /* cuMemFree synchronizes */
		r = free_locked(p);
	}
	pthread_mutex_unlock(&mu);
	return r;
}

CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t n, void *h) {
	pthread_mutex_lock(&mu);
	struct fake_stream *s = NULL;
	CUresult r = need_stream_locked(h, &s);
	if (r == CUDA_SUCCESS && !pools)
		r = CUDA_ERROR_INVALID_VALUE;
	if (r == CUDA_SUCCESS)
		r = alloc_locked(dptr, n);
	if (r == CUDA_SUCCESS) {
		async_allocs++;
		queued_locked(s);
	}
	pthread_mutex_unlock(&mu);
	return r;
}

CUresult cuMemFreeAsync(CUdeviceptr p, void *h) {
	pthread_mutex_lock(&mu);
	struct fake_stream *s = NULL;
	CUresult r = need_stream_locked(h, &s);
	if (r == CUDA_SUCCESS) {
		flush_locked(s);
		r = free_locked(p);
	}
	if (r == CUDA_SUCCESS)
		queued_locked(s);
	pthread_mutex_unlock(&mu);
	return r;
}

CUresult cuMemsetD8Async(CUdeviceptr p, unsigned char v, size_t n, void *h) {
	pthread_mutex_lock(&mu);
	struct fake_stream *s = NULL;
	CUresult r = need_stream_locked(h, &s);
	if (r == CUDA_SUCCESS && !inside_locked(p, n))
		r = CUDA_ERROR_INVALID_VALUE;
	if (r == CUDA_SUCCESS) {
		flush_locked(s);
		memset((void *)(uintptr_t)p, v, n);
		memsets++;
		queued_locked(s);
	}
	pthread_mutex_unlock(&mu);
	return r;
}

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, void *h) {
	pthread_mutex_lock(&mu);
	struct fake_stream *s = NULL;
	CUresult r = need_stream_locked(h, &s);
	if (r == CUDA_SUCCESS && (src == NULL || !inside_locked(dst, n)))
		r = CUDA_ERROR_INVALID_VALUE;
	if (r == CUDA_SUCCESS) {
		if (pinned_locked(src, n))
			defer_copy_locked(s, (void *)(uintptr_t)dst, src, n);
		else {
			flush_locked(s);
			memcpy((void *)(uintptr_t)dst, src, n);
			pageable_copies++;
		}
		queued_locked(s);
	}
	pthread_mutex_unlock(&mu);
	return r;
}

CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, void *h) {
	pthread_mutex_lock(&mu);
	struct fake_stream *s = NULL;
	CUresult r = need_stream_locked(h, &s);
	if (r == CUDA_SUCCESS && (dst == NULL || !inside_locked(src, n)))
		r = CUDA_ERROR_INVALID_VALUE;
	if (r == CUDA_SUCCESS) {
		if (pinned_locked(dst, n))
			defer_copy_locked(s, dst, (const void *)(uintptr_t)src, n);
		else {
			flush_locked(s);
			memcpy(dst, (const void *)(uintptr_t)src, n);
			pageable_copies++;
		}
		queued_locked(s);
	}
	pthread_mutex_unlock(&mu);
	return r;
}

CUresult cuModuleLoadData(void **mod, const void *image) {
	pthread_mutex_lock(&mu);
	CUresult r = need_ctx_locked();
	int cubin = image != NULL && strncmp(image, "// fake-cubin", 13) == 0;
	if (r == CUDA_SUCCESS && !cubin && (image == NULL || strncmp(image, "// fake-ptx", 11) != 0))
		r = CUDA_ERROR_INVALID_VALUE;
	if (r == CUDA_SUCCESS) {
		cubin_loads += cubin;
		struct fake_module *m = calloc(1, sizeof *m);
		m->image = strdup(image);
		m->next = modules;
		modules = m;
		live_modules++;
		module_loads++;
		*mod = m;
	}
	pthread_mutex_unlock(&mu);
	return r;
}

static struct fake_module *find_module_locked(void *h) {
	for (struct fake_module *m = modules; m != NULL; m = m->next)
		if ((void *)m == h)
			return m;
	return NULL;
}

static int known_kernel(const char *name) {
	return strcmp(name, "axpy_f32") == 0 || strcmp(name, "scale_f64") == 0 ||
	       strcmp(name, "spin") == 0 || strcmp(name, "poke") == 0 ||
	       strcmp(name, "riot_f32_to_bf16") == 0 || strcmp(name, "riot_bf16_to_f32") == 0 ||
	       strcmp(name, "riot_f32_to_f16") == 0 || strcmp(name, "riot_f16_to_f32") == 0;
}

CUresult cuModuleGetFunction(void **fn, void *mod, const char *name) {
	pthread_mutex_lock(&mu);
	CUresult r = need_ctx_locked();
	struct fake_module *m = NULL;
	if (r == CUDA_SUCCESS && (m = find_module_locked(mod)) == NULL)
		r = CUDA_ERROR_INVALID_HANDLE;
	if (r == CUDA_SUCCESS) {
		char decl[96];
		snprintf(decl, sizeof decl, "void %s(", name);
		if (!known_kernel(name) || strstr(m->image, decl) == NULL)
			r = CUDA_ERROR_NOT_FOUND;
	}
	if (r == CUDA_SUCCESS) {
		struct fake_func *f = calloc(1, sizeof *f);
		snprintf(f->name, sizeof f->name, "%s", name);
		f->mod = m;
		*fn = f; /* leaked with the module, as the fake never reuses them */
	}
	pthread_mutex_unlock(&mu);
	return r;
}

CUresult cuModuleUnload(void *mod) {
	pthread_mutex_lock(&mu);
	CUresult r = need_ctx_locked();
	if (r == CUDA_SUCCESS) {
		r = CUDA_ERROR_INVALID_HANDLE;
		for (struct fake_module **pp = &modules; *pp != NULL; pp = &(*pp)->next) {
			if (*pp == mod) {
				struct fake_module *m = *pp;
				*pp = m->next;
				free(m->image);
				free(m);
				live_modules--;
				r = CUDA_SUCCESS;
				break;
			}
		}
	}
	pthread_mutex_unlock(&mu);
	return r;
}

/* Conversions with rounding to nearest, ties to even, as the device's
 * conversion kernels do; bit by bit, so that the tests can check them against
 * the Go reference, which computes them another way. */
static unsigned short f32_to_bf16(float f) {
	uint32_t u;
	memcpy(&u, &f, 4);
	if ((u & 0x7fffffff) > 0x7f800000)
		return (unsigned short)((u >> 16) | 0x40); /* a quiet NaN */
	u += 0x7fff + ((u >> 16) & 1);
	return (unsigned short)(u >> 16);
}

static float bf16_to_f32(unsigned short h) {
	uint32_t u = (uint32_t)h << 16;
	float f;
	memcpy(&f, &u, 4);
	return f;
}

static unsigned short f32_to_f16(float f) {
	uint32_t u;
	memcpy(&u, &f, 4);
	unsigned short sign = (unsigned short)((u >> 16) & 0x8000);
	uint32_t a = u & 0x7fffffff;
	if (a > 0x7f800000)
		return sign | 0x7e00 | ((a >> 13) & 0x3ff);
	if (a >= 0x477ff000) /* 65520 and above round to infinity */
		return sign | 0x7c00;
	if (a < 0x38800000) { /* below 2^-14: a subnormal half, or zero */
		if (a <= 0x33000000) /* up to 2^-25 (a tie) rounds to zero */
			return sign;
		uint32_t e = a >> 23, m = (a & 0x7fffff) | 0x800000;
		int shift = 126 - (int)e;
		uint32_t q = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
		if (rem > half || (rem == half && (q & 1)))
			q++;
		return sign | (unsigned short)q;
	}
	uint32_t r = a - 0x38000000; /* rebias the exponent from 127 to 15 */
	uint32_t q = r >> 13, rem = r & 0x1fff;
	if (rem > 0x1000 || (rem == 0x1000 && (q & 1)))
		q++;
	return sign | (unsigned short)q;
}

static float f16_to_f32(unsigned short h) {
	uint32_t sign = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff, u;
	float f;
	if (e == 0x1f)
		u = sign | 0x7f800000 | (m << 13);
	else if (e == 0) {
		f = (float)m / 16777216.0f; /* m·2^-24, exact */
		memcpy(&u, &f, 4);
		u |= sign;
	} else
		u = sign | ((e + 112) << 23) | (m << 13);
	memcpy(&f, &u, 4);
	return f;
}

/* The fake kernels. Each thread index i in [0, threads) handles element i. */
static CUresult run_kernel_locked(struct fake_func *f, struct fake_stream *s, long long threads, void **p) {
	if (strcmp(f->name, "axpy_f32") == 0) { /* (float a, const float *x, float *y, int n) */
		float a = *(float *)p[0];
		float *x = (float *)(uintptr_t)*(CUdeviceptr *)p[1];
		float *y = (float *)(uintptr_t)*(CUdeviceptr *)p[2];
		int n = *(int *)p[3];
		if (!inside_locked((CUdeviceptr)(uintptr_t)x, n * sizeof(float)) ||
		    !inside_locked((CUdeviceptr)(uintptr_t)y, n * sizeof(float)))
			return CUDA_ERROR_ILLEGAL_ADDRESS;
		for (long long i = 0; i < threads && i < n; i++)
			y[i] = a * x[i] + y[i];
		return CUDA_SUCCESS;
	}
	if (strcmp(f->name, "scale_f64") == 0) { /* (double a, double *x, long long n) */
		double a = *(double *)p[0];
		double *x = (double *)(uintptr_t)*(CUdeviceptr *)p[1];
		long long n = *(long long *)p[2];
		if (!inside_locked((CUdeviceptr)(uintptr_t)x, n * sizeof(double)))
			return CUDA_ERROR_ILLEGAL_ADDRESS;
		for (long long i = 0; i < threads && i < n; i++)
			x[i] *= a;
		return CUDA_SUCCESS;
	}
	if (strcmp(f->name, "poke") == 0) { /* (float *x): writes past any allocation */
		float *x = (float *)(uintptr_t)*(CUdeviceptr *)p[0];
		(void)x;
		return CUDA_ERROR_ILLEGAL_ADDRESS;
	}
	if (strncmp(f->name, "riot_", 5) == 0) { /* (const T *in, U *out, long long n) */
		void *in = (void *)(uintptr_t)*(CUdeviceptr *)p[0];
		void *out = (void *)(uintptr_t)*(CUdeviceptr *)p[1];
		long long n = *(long long *)p[2];
		int from32 = strncmp(f->name, "riot_f32_", 9) == 0;
		size_t insz = from32 ? 4 : 2, outsz = from32 ? 2 : 4;
		if (!inside_locked((CUdeviceptr)(uintptr_t)in, n * insz) ||
		    !inside_locked((CUdeviceptr)(uintptr_t)out, n * outsz))
			return CUDA_ERROR_ILLEGAL_ADDRESS;
		int bf = strstr(f->name, "bf16") != NULL;
		(void)threads; /* a grid-stride loop: every element, whatever the grid */
		for (long long i = 0; i < n; i++) {
			if (from32) {
				float x = ((float *)in)[i];
				((unsigned short *)out)[i] = bf ? f32_to_bf16(x) : f32_to_f16(x);
			} else {
				unsigned short x = ((unsigned short *)in)[i];
				((float *)out)[i] = bf ? bf16_to_f32(x) : f16_to_f32(x);
			}
		}
		conversions++;
		return CUDA_SUCCESS;
	}
	if (strcmp(f->name, "spin") == 0) { /* (): never finishes */
		s->pending = -1;
		return CUDA_SUCCESS;
	}
	return CUDA_ERROR_NOT_FOUND;
}

CUresult cuLaunchKernel(void *fn, unsigned int gx, unsigned int gy, unsigned int gz,
                        unsigned int bx, unsigned int by, unsigned int bz,
                        unsigned int shared, void *h, void **params, void **extra) {
	pthread_mutex_lock(&mu);
	struct fake_stream *s = NULL;
	CUresult r = need_stream_locked(h, &s);
	(void)shared;
	if (r == CUDA_SUCCESS && (fn == NULL || extra != NULL || gx == 0 || gy == 0 || gz == 0 ||
	                          bx == 0 || by == 0 || bz == 0 || bx * by * bz > 1024))
		r = CUDA_ERROR_INVALID_VALUE;
	if (r == CUDA_SUCCESS && params == NULL && strcmp(((struct fake_func *)fn)->name, "spin") != 0)
		r = CUDA_ERROR_INVALID_VALUE;
	if (r == CUDA_SUCCESS) {
		flush_locked(s);
		launches++;
		queued_locked(s);
		long long threads = (long long)gx * gy * gz * bx * by * bz;
		CUresult k = run_kernel_locked(fn, s, threads, params);
		if (k != CUDA_SUCCESS)
			s->error = k; /* reported later, as a real asynchronous failure is */
	}
	pthread_mutex_unlock(&mu);
	return r;
}

/* ---- page-locked host memory and events ---- */

CUresult cuMemHostAlloc(void **pp, size_t n, unsigned int flags) {
	pthread_mutex_lock(&mu);
	CUresult r = need_ctx_locked();
	if (r == CUDA_SUCCESS && (pp == NULL || n == 0 || (flags & ~0xfu) != 0))
		r = CUDA_ERROR_INVALID_VALUE;
	if (r == CUDA_SUCCESS && host_alloc_bytes + (long long)n > host_oom_bytes)
		r = CUDA_ERROR_OUT_OF_MEMORY;
	if (r == CUDA_SUCCESS) {
		struct fake_host *h = calloc(1, sizeof *h);
		h->p = calloc(1, n);
		h->n = n;
		h->next = hosts;
		hosts = h;
		live_host_allocs++;
		host_allocs++;
		host_alloc_bytes += (long long)n;
		*pp = h->p;
	}
	pthread_mutex_unlock(&mu);
	return r;
}

/* drop_copies_locked forgets the queued copies that touch [p, p+n), counting
 * them: freeing page-locked memory under a copy is a bug of the binding. */
static void drop_copies_locked(unsigned char *p, size_t n) {
	for (struct fake_stream *s = streams; s != NULL; s = s->next) {
		struct fake_copy **pp = &s->copies, *last = NULL;
		while (*pp != NULL) {
			struct fake_copy *c = *pp;
			const unsigned char *d = c->dst, *src = c->src;
			if ((d >= p && d < p + n) || (src >= p && src < p + n)) {
				*pp = c->next;
				free(c);
				bad_host_frees++;
				continue;
			}
			last = c;
			pp = &c->next;
		}
		s->last = last;
	}
}

CUresult cuMemFreeHost(void *p) {
	pthread_mutex_lock(&mu);
	CUresult r = need_ctx_locked();
	if (r == CUDA_SUCCESS) {
		r = CUDA_ERROR_INVALID_VALUE;
		for (struct fake_host **pp = &hosts; *pp != NULL; pp = &(*pp)->next) {
			struct fake_host *h = *pp;
			if (h->p == p) {
				drop_copies_locked(h->p, h->n);
				*pp = h->next;
				host_alloc_bytes -= (long long)h->n;
				free(h->p);
				free(h);
				live_host_allocs--;
				r = CUDA_SUCCESS;
				break;
			}
		}
	}
	pthread_mutex_unlock(&mu);
	return r;
}

static struct fake_event *find_event_locked(void *h) {
	for (struct fake_event *e = events; e != NULL; e = e->next)
		if ((void *)e == h && e->magic == EVENT_MAGIC)
			return e;
	return NULL;
}

CUresult cuEventCreate(void **ph, unsigned int flags) {
	pthread_mutex_lock(&mu);
	CUresult r = need_ctx_locked();
	if (r == CUDA_SUCCESS && (ph == NULL || (flags & ~0x7u) != 0))
		r = CUDA_ERROR_INVALID_VALUE;
	if (r == CUDA_SUCCESS) {
		struct fake_event *e = calloc(1, sizeof *e);
		e->magic = EVENT_MAGIC;
		e->next = events;
		events = e;
		live_events++;
		*ph = e;
	}
	pthread_mutex_unlock(&mu);
	return r;
}

CUresult cuEventRecord(void *ev, void *h) {
	pthread_mutex_lock(&mu);
	struct fake_stream *s = NULL;
	CUresult r = need_stream_locked(h, &s);
	struct fake_event *e = NULL;
	if (r == CUDA_SUCCESS && (e = find_event_locked(ev)) == NULL)
		r = CUDA_ERROR_INVALID_HANDLE;
	if (r == CUDA_SUCCESS) {
		e->stream = s;
		e->seq = s->seq + 1;
		e->pending = s->pending < 0 ? -1 : event_not_ready;
	}
	pthread_mutex_unlock(&mu);
	return r;
}

CUresult cuEventQuery(void *ev) {
	pthread_mutex_lock(&mu);
	CUresult r = need_ctx_locked();
	struct fake_event *e = NULL;
	if (r == CUDA_SUCCESS && (e = find_event_locked(ev)) == NULL)
		r = CUDA_ERROR_INVALID_HANDLE;
	if (r == CUDA_SUCCESS) {
		event_queries++;
		if (e->stream != NULL && e->stream->error != 0)
			r = e->stream->error;
		else if (e->pending != 0) {
			if (e->pending > 0)
				e->pending--;
			r = CUDA_ERROR_NOT_READY;
		} else if (e->stream != NULL)
			run_copies_locked(e->stream, e->seq);
	}
	pthread_mutex_unlock(&mu);
	return r;
}

CUresult cuEventDestroy_v2(void *ev) {
	pthread_mutex_lock(&mu);
	CUresult r = need_ctx_locked();
	if (r == CUDA_SUCCESS) {
		r = CUDA_ERROR_INVALID_HANDLE;
		for (struct fake_event **pp = &events; *pp != NULL; pp = &(*pp)->next) {
			if (*pp == ev && (*pp)->magic == EVENT_MAGIC) {
				struct fake_event *e = *pp;
				*pp = e->next;
				e->magic = 0;
				free(e);
				live_events--;
				r = CUDA_SUCCESS;
				break;
			}
		}
	}
	pthread_mutex_unlock(&mu);
	return r;
}

CUresult cuGetErrorName(CUresult e, const char **s) {
	const char *n = NULL;
	switch (e) {
	case CUDA_SUCCESS: n = "CUDA_SUCCESS"; break;
	case CUDA_ERROR_INVALID_VALUE: n = "CUDA_ERROR_INVALID_VALUE"; break;
	case CUDA_ERROR_OUT_OF_MEMORY: n = "CUDA_ERROR_OUT_OF_MEMORY"; break;
	case CUDA_ERROR_NOT_INITIALIZED: n = "CUDA_ERROR_NOT_INITIALIZED"; break;
	case CUDA_ERROR_NO_DEVICE: n = "CUDA_ERROR_NO_DEVICE"; break;
	case CUDA_ERROR_INVALID_DEVICE: n = "CUDA_ERROR_INVALID_DEVICE"; break;
	case CUDA_ERROR_INVALID_CONTEXT: n = "CUDA_ERROR_INVALID_CONTEXT"; break;
	case CUDA_ERROR_INVALID_HANDLE: n = "CUDA_ERROR_INVALID_HANDLE"; break;
	case CUDA_ERROR_NOT_FOUND: n = "CUDA_ERROR_NOT_FOUND"; break;
	case CUDA_ERROR_NOT_READY: n = "CUDA_ERROR_NOT_READY"; break;
	case CUDA_ERROR_ILLEGAL_ADDRESS: n = "CUDA_ERROR_ILLEGAL_ADDRESS"; break;
	}
	if (s != NULL)
		*s = n;
	return n == NULL ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

CUresult cuGetErrorString(CUresult e, const char **s) {
	const char *n = NULL;
	switch (e) {
	case CUDA_SUCCESS: n = "fake: no error"; break;
	case CUDA_ERROR_INVALID_VALUE: n = "fake: invalid argument"; break;
	case CUDA_ERROR_OUT_OF_MEMORY: n = "fake: out of memory"; break;
	case CUDA_ERROR_NOT_INITIALIZED: n = "fake: initialization error"; break;
	case CUDA_ERROR_NO_DEVICE: n = "fake: no CUDA-capable device is detected"; break;
	case CUDA_ERROR_INVALID_DEVICE: n = "fake: invalid device ordinal"; break;
	case CUDA_ERROR_INVALID_CONTEXT: n = "fake: invalid device context"; break;
	case CUDA_ERROR_INVALID_HANDLE: n = "fake: invalid resource handle"; break;
	case CUDA_ERROR_NOT_FOUND: n = "fake: named symbol not found"; break;
	case CUDA_ERROR_NOT_READY: n = "fake: device not ready"; break;
	case CUDA_ERROR_ILLEGAL_ADDRESS: n = "fake: an illegal memory access was encountered"; break;
	}
	if (s != NULL)
		*s = n;
	return n == NULL ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

/* ---- cuBLAS (fake) ---- */

struct fake_blas {
	struct fake_ctx *ctx;
	struct fake_stream *stream;
};

int cublasCreate_v2(void **h) {
	pthread_mutex_lock(&mu);
	int r = need_ctx_locked() == CUDA_SUCCESS ? 0 : 1; /* CUBLAS_STATUS_NOT_INITIALIZED */
	if (r == 0 && blas_alloc_fail)
		r = 3; /* CUBLAS_STATUS_ALLOC_FAILED */
	if (r == 0) {
		struct fake_blas *b = calloc(1, sizeof *b);
		b->ctx = current;
		*h = b;
		blas_handles++;
	}
	pthread_mutex_unlock(&mu);
	return r;
}

int cublasDestroy_v2(void *h) {
	pthread_mutex_lock(&mu);
	int r = h == NULL ? 1 : 0;
	if (r == 0) {
		free(h);
		blas_handles--;
	}
	pthread_mutex_unlock(&mu);
	return r;
}

int cublasSetStream_v2(void *h, void *stream) {
	pthread_mutex_lock(&mu);
	struct fake_blas *b = h;
	int r = 0;
	if (b == NULL)
		r = 1;
	else if (stream == NULL)
		b->stream = NULL; /* the default stream: unbound, as a pooled handle is */
	else if ((b->stream = find_stream_locked(stream)) == NULL)
		r = 7; /* CUBLAS_STATUS_INVALID_VALUE */
	else
		blas_stream_sets++;
	pthread_mutex_unlock(&mu);
	return r;
}

/* gemm_check validates a column-major gemm's arguments and extents. */
static int gemm_check_locked(struct fake_blas *b, int ta, int tb, int m, int n, int k,
                             CUdeviceptr A, int lda, CUdeviceptr B, int ldb, CUdeviceptr C, int ldc,
                             size_t size) {
	if (b == NULL || b->stream == NULL || current != b->ctx)
		return 1;
	if (m < 0 || n < 0 || k < 0 || ta < 0 || ta > 1 || tb < 0 || tb > 1)
		return 7;
	int arows = ta ? k : m, acols = ta ? m : k;
	int brows = tb ? n : k, bcols = tb ? k : n;
	if (lda < (arows > 1 ? arows : 1) || ldb < (brows > 1 ? brows : 1) || ldc < (m > 1 ? m : 1))
		return 7;
	if (!inside_locked(A, ((size_t)lda * (acols - 1) + arows) * size) ||
	    !inside_locked(B, ((size_t)ldb * (bcols - 1) + brows) * size) ||
	    !inside_locked(C, ((size_t)ldc * (n - 1) + m) * size))
		return 13; /* CUBLAS_STATUS_EXECUTION_FAILED */
	return 0;
}

#define GEMM_BODY(T)                                                                  \
	for (int j = 0; j < n; j++) {                                                     \
		for (int i = 0; i < m; i++) {                                                 \
			T sum = 0;                                                                \
			for (int l = 0; l < k; l++) {                                             \
				T a = ta ? A[l + (size_t)i * lda] : A[i + (size_t)l * lda];           \
				T bb = tb ? B[j + (size_t)l * ldb] : B[l + (size_t)j * ldb];          \
				sum += a * bb;                                                        \
			}                                                                         \
			T *c = &C[i + (size_t)j * ldc];                                           \
			*c = *beta == 0 ? *alpha * sum : *alpha * sum + *beta * *c;              \
		}                                                                             \
	}

int cublasSgemm_v2(void *h, int ta, int tb, int m, int n, int k, const float *alpha,
                   const float *A, int lda, const float *B, int ldb, const float *beta,
                   float *C, int ldc) {
	pthread_mutex_lock(&mu);
	struct fake_blas *bh = h;
	int r = gemm_check_locked(bh, ta, tb, m, n, k, (CUdeviceptr)(uintptr_t)A, lda,
	                          (CUdeviceptr)(uintptr_t)B, ldb, (CUdeviceptr)(uintptr_t)C, ldc, sizeof(float));
	if (r == 0) {
		flush_locked(bh->stream);
		GEMM_BODY(float)
		gemms++;
		queued_locked(bh->stream);
	}
	pthread_mutex_unlock(&mu);
	return r;
}

int cublasDgemm_v2(void *h, int ta, int tb, int m, int n, int k, const double *alpha,
                   const double *A, int lda, const double *B, int ldb, const double *beta,
                   double *C, int ldc) {
	pthread_mutex_lock(&mu);
	struct fake_blas *bh = h;
	int r = gemm_check_locked(bh, ta, tb, m, n, k, (CUdeviceptr)(uintptr_t)A, lda,
	                          (CUdeviceptr)(uintptr_t)B, ldb, (CUdeviceptr)(uintptr_t)C, ldc, sizeof(double));
	if (r == 0) {
		flush_locked(bh->stream);
		GEMM_BODY(double)
		gemms++;
		queued_locked(bh->stream);
	}
	pthread_mutex_unlock(&mu);
	return r;
}

/* cublasGemmEx with float accumulation: A and B of one type (CUDA_R_32F 0,
 * CUDA_R_16F 2, CUDA_R_16BF 14), C of theirs or CUDA_R_32F, computeType
 * CUBLAS_COMPUTE_32F (68) or one of its fast modes (74, 75, 77). */
static float load_elem(const void *p, int type, size_t i) {
	switch (type) {
	case 0: return ((const float *)p)[i];
	case 2: return f16_to_f32(((const unsigned short *)p)[i]);
	default: return bf16_to_f32(((const unsigned short *)p)[i]);
	}
}

static void store_elem(void *p, int type, size_t i, float v) {
	switch (type) {
	case 0: ((float *)p)[i] = v; break;
	case 2: ((unsigned short *)p)[i] = f32_to_f16(v); break;
	default: ((unsigned short *)p)[i] = f32_to_bf16(v); break;
	}
}

static size_t type_size(int type) { return type == 0 ? 4 : type == 2 || type == 14 ? 2 : 0; }

int cublasGemmEx(void *h, int ta, int tb, int m, int n, int k, const void *alpha,
                 const void *A, int atype, int lda, const void *B, int btype, int ldb,
                 const void *beta, void *C, int ctype, int ldc, int compute, int algo) {
	pthread_mutex_lock(&mu);
	struct fake_blas *bh = h;
	int r = 0;
	if (type_size(atype) == 0 || atype != btype || (ctype != atype && ctype != 0) ||
	    (compute != 68 && compute != 74 && compute != 75 && compute != 77) || algo != -1)
		r = 7; /* CUBLAS_STATUS_INVALID_VALUE */
	if (r == 0 && (ctype != atype || atype != 0) && type_size(ctype) == 0)
		r = 7;
	/* gemm_check_locked checks extents in elements of one size, A's and B's;
	 * C is checked again with its own. */
	if (r == 0)
		r = gemm_check_locked(bh, ta, tb, m, n, k, (CUdeviceptr)(uintptr_t)A, lda,
		                      (CUdeviceptr)(uintptr_t)B, ldb, (CUdeviceptr)(uintptr_t)C, ldc, type_size(atype));
	if (r == 0 && !inside_locked((CUdeviceptr)(uintptr_t)C, ((size_t)ldc * (n - 1) + m) * type_size(ctype)))
		r = 13;
	if (r == 0) {
		flush_locked(bh->stream);
		float al = *(const float *)alpha, be = *(const float *)beta;
		for (int j = 0; j < n; j++) {
			for (int i = 0; i < m; i++) {
				float sum = 0;
				for (int l = 0; l < k; l++) {
					float a = ta ? load_elem(A, atype, l + (size_t)i * lda) : load_elem(A, atype, i + (size_t)l * lda);
					float b = tb ? load_elem(B, btype, j + (size_t)l * ldb) : load_elem(B, btype, l + (size_t)j * ldb);
					sum += a * b;
				}
				size_t ci = i + (size_t)j * ldc;
				store_elem(C, ctype, ci, be == 0 ? al * sum : al * sum + be * load_elem(C, ctype, ci));
			}
		}
		gemm_ex++;
		gemm_ex_compute = compute;
		queued_locked(bh->stream);
	}
	pthread_mutex_unlock(&mu);
	return r;
}

/* ---- cuSOLVER and cuSPARSE (fake): handles only ---- */

struct fake_handle {
	struct fake_ctx *ctx;
	struct fake_stream *stream;
};

static int handle_create(void **h, long long *counter) {
	pthread_mutex_lock(&mu);
	int r = need_ctx_locked() == CUDA_SUCCESS ? 0 : 1;
	if (r == 0) {
		struct fake_handle *x = calloc(1, sizeof *x);
		x->ctx = current;
		*h = x;
		(*counter)++;
	}
	pthread_mutex_unlock(&mu);
	return r;
}

static int handle_destroy(void *h, long long *counter) {
	pthread_mutex_lock(&mu);
	int r = h == NULL ? 1 : 0;
	if (r == 0) {
		free(h);
		(*counter)--;
	}
	pthread_mutex_unlock(&mu);
	return r;
}

static int handle_set_stream(void *h, void *stream) {
	pthread_mutex_lock(&mu);
	struct fake_handle *x = h;
	int r = 0;
	if (x == NULL)
		r = 1;
	else if (stream == NULL)
		x->stream = NULL;
	else if ((x->stream = find_stream_locked(stream)) == NULL)
		r = 3; /* INVALID_VALUE in both libraries */
	pthread_mutex_unlock(&mu);
	return r;
}

int cusolverDnCreate(void **h) { return handle_create(h, &solver_handles); }
int cusolverDnDestroy(void *h) { return handle_destroy(h, &solver_handles); }
int cusolverDnSetStream(void *h, void *s) { return handle_set_stream(h, s); }
int cusparseCreate(void **h) { return handle_create(h, &sparse_handles); }
int cusparseDestroy(void *h) { return handle_destroy(h, &sparse_handles); }
int cusparseSetStream(void *h, void *s) { return handle_set_stream(h, s); }

/* ---- NVRTC (fake) ---- */

struct fake_program {
	char *src;
	char *name;
	char *ptx;
	char *log;
	int sm; /* compiled for a real architecture (sm_XY): a cubin too */
};

int nvrtcCreateProgram(void **prog, const char *src, const char *name, int nh,
                       const char *const *headers, const char *const *includes) {
	(void)headers;
	(void)includes;
	if (prog == NULL || src == NULL || nh != 0)
		return 3; /* NVRTC_ERROR_INVALID_INPUT */
	struct fake_program *p = calloc(1, sizeof *p);
	p->src = strdup(src);
	p->name = strdup(name != NULL ? name : "default_program");
	p->log = strdup("");
	*prog = p;
	return 0;
}

int nvrtcCompileProgram(void *prog, int nopt, const char *const *opts) {
	struct fake_program *p = prog;
	if (p == NULL)
		return 4; /* NVRTC_ERROR_INVALID_PROGRAM */
	pthread_mutex_lock(&mu);
	long long oom = nvrtc_oom;
	compiles++;
	pthread_mutex_unlock(&mu);
	if (oom)
		return 1; /* NVRTC_ERROR_OUT_OF_MEMORY */
	size_t optlen = 1;
	for (int i = 0; i < nopt; i++) {
		if (opts[i] == NULL)
			return 5; /* NVRTC_ERROR_INVALID_OPTION */
		if (strncmp(opts[i], "--bogus", 7) == 0)
			return 5;
		const char *sm = strstr(opts[i], "sm_");
		if (sm != NULL && atoll(sm + 3) > nvrtc_max_sm)
			return 5; /* an architecture this NVRTC does not know */
		optlen += strlen(opts[i]) + 1;
	}
	char *joined = calloc(1, optlen);
	for (int i = 0; i < nopt; i++) {
		strcat(joined, opts[i]);
		if (i + 1 < nopt)
			strcat(joined, " ");
	}
	const char *bad = strstr(p->src, "#error");
	if (bad != NULL) {
		free(p->log);
		size_t n = strlen(p->name) + 64;
		p->log = calloc(1, n);
		snprintf(p->log, n, "%s(1): error: #error directive (fake nvrtc)\n", p->name);
		free(joined);
		return 6; /* NVRTC_ERROR_COMPILATION */
	}
	size_t n = strlen(p->src) + strlen(joined) + 64;
	free(p->ptx);
	p->ptx = calloc(1, n);
	snprintf(p->ptx, n, "// fake-ptx\n// options: %s\n%s", joined, p->src);
	p->sm = strstr(joined, "sm_") != NULL;
	free(joined);
	return 0;
}

/* The fake's cubin is its PTX under another first line; a program
 * compiled for a virtual architecture has none (size 0), as NVRTC's. */
int nvrtcGetCUBINSize(void *prog, size_t *n) {
	struct fake_program *p = prog;
	if (p == NULL || p->ptx == NULL)
		return 4;
	*n = (p->sm && nvrtc_cubin) ? strlen(p->ptx) + 3 : 0; /* "// fake-cubin" for "// fake-ptx" */
	return 0;
}

int nvrtcGetCUBIN(void *prog, char *out) {
	struct fake_program *p = prog;
	if (p == NULL || p->ptx == NULL || !p->sm || !nvrtc_cubin)
		return 4;
	strcpy(out, "// fake-cubin");
	strcpy(out + 13, p->ptx + 11);
	return 0;
}

int nvrtcGetPTXSize(void *prog, size_t *n) {
	struct fake_program *p = prog;
	if (p == NULL || p->ptx == NULL)
		return 4;
	*n = strlen(p->ptx) + 1;
	return 0;
}

int nvrtcGetPTX(void *prog, char *out) {
	struct fake_program *p = prog;
	if (p == NULL || p->ptx == NULL)
		return 4;
	memcpy(out, p->ptx, strlen(p->ptx) + 1);
	return 0;
}

int nvrtcGetProgramLogSize(void *prog, size_t *n) {
	struct fake_program *p = prog;
	if (p == NULL)
		return 4;
	*n = strlen(p->log) + 1;
	return 0;
}

int nvrtcGetProgramLog(void *prog, char *out) {
	struct fake_program *p = prog;
	if (p == NULL)
		return 4;
	memcpy(out, p->log, strlen(p->log) + 1);
	return 0;
}

int nvrtcDestroyProgram(void **prog) {
	if (prog == NULL || *prog == NULL)
		return 4;
	struct fake_program *p = *prog;
	free(p->src);
	free(p->name);
	free(p->ptx);
	free(p->log);
	free(p);
	*prog = NULL;
	return 0;
}

const char *nvrtcGetErrorString(int r) {
	switch (r) {
	case 0: return "NVRTC_SUCCESS";
	case 1: return "NVRTC_ERROR_OUT_OF_MEMORY";
	case 3: return "NVRTC_ERROR_INVALID_INPUT";
	case 4: return "NVRTC_ERROR_INVALID_PROGRAM";
	case 5: return "NVRTC_ERROR_INVALID_OPTION";
	case 6: return "NVRTC_ERROR_COMPILATION";
	}
	return "NVRTC_ERROR unknown";
}
