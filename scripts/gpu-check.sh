#!/usr/bin/env bash
# gpu-check.sh: riot's GPU check, for a machine with an NVIDIA GPU and driver.
#
# In under five minutes, it
#   1. builds (CGO_ENABLED=0, as releases are built) the gpu package's test
#      binary, the GPU bindings' test binary (engine/jsgpu), riotd and
#      riot-worker;
#   2. asks the driver for its devices, and stops there, with status 3, when
#      there is no usable driver (as on a machine without a GPU);
#   3. runs every test of package gpu with RIOT_GPU_REAL=1 (so the tests that
#      need the real driver run, and a missing driver is a failure, not a
#      skip), and the bindings' real-driver test (engine/jsgpu's
#      TestGPUReal_*);
#   4. starts riotd and one riot-worker (which opens the driver) on loopback
#      and runs the job scripts scripts/gpu-*.js against them with
#      riot-worker eval --tracker, checking each one's output: the seed's
#      section 1.3 (finding, resources, timing, worker, fanning, failures),
#      the NVRTC example (saxpy), the short matMul benchmark (gemm) and the
#      fan-out with real work (fanout: four workunits on one device);
#   5. benchmarks the gpu package: Sync overhead, host<->device bandwidth
#      (staged and pageable), gemm TFLOP/s (float32, float64, tf32, bf16,
#      f16) through the binding, and four workunits' streams on one device
#      (BenchmarkFanOut);
#   6. builds scripts/gpu/anchor.c against the CUDA toolkit and runs it (the
#      same copies, sync and products from C), and scripts/gpu/anchor_torch.py
#      where PyTorch is installed;
# and prints a short table, then riot's figures beside the anchor's as
# ratios, with the speed goals (docs/gpu.md, "Speed goals").
#
# Usage:
#   scripts/gpu-check.sh --build DIR
#       only builds, stripped and gzipped, what the check runs (gpu.test,
#       jsgpu.test, riotd, riot-worker: about 22 MB) into DIR, for a GPU
#       machine without Go; then, there: RIOT_BIN_DIR=DIR scripts/gpu-check.sh
#   scripts/gpu-check.sh
#       needs Go and the module cache (or network) for the build;
#   GPU_TEST_BINARY=/path/gpu.test scripts/gpu-check.sh
#       uses a gpu test binary built elsewhere with
#       CGO_ENABLED=0 go test -c -o gpu.test ./gpu; without Go, only steps
#       2, 3 (package gpu) and 5 run.
#   RIOT_BIN_DIR=/path scripts/gpu-check.sh
#       uses riotd, riot-worker and jsgpu.test from /path (built elsewhere:
#       go build ./cmd/riotd ./cmd/riot-worker; go test -c ./engine/jsgpu).
#
# The libraries are found as the package finds them (libcuda.so.1 by the
# loader; cuBLAS, cuSOLVER, cuSPARSE, NVRTC also in $CUDA_HOME/lib64 and
# /usr/local/cuda/lib64); RIOT_CUDA_LIBRARY, RIOT_CUBLAS_LIBRARY,
# RIOT_CUSOLVER_LIBRARY, RIOT_CUSPARSE_LIBRARY and RIOT_NVRTC_LIBRARY override
# them. RIOT_GPU_BENCH_N (default 4096) sizes the gemm benchmark and the gemm
# script, RIOT_GPU_BENCH_MIB (default 64) the copies.
#
# Exit status: 0 when everything passed; 1 when something failed; 2 when it
# cannot build; 3 when there is no usable CUDA driver here.
set -uo pipefail

cd "$(dirname "$0")/.." || exit 2

if [ "${1:-}" = "--build" ]; then
	out=${2:?"usage: scripts/gpu-check.sh --build DIR"}
	mkdir -p "$out" || exit 2
	flags=(-trimpath -ldflags=-s\ -w)
	rm -f "$out"/gpu.test "$out"/jsgpu.test "$out"/riotd "$out"/riot-worker "$out"/*.gz
	CGO_ENABLED=0 go test -c "${flags[@]}" -o "$out/gpu.test" ./gpu/ &&
		CGO_ENABLED=0 go test -c "${flags[@]}" -o "$out/jsgpu.test" ./engine/jsgpu/ &&
		CGO_ENABLED=0 go build "${flags[@]}" -o "$out/" ./cmd/riotd ./cmd/riot-worker || exit 2
	# Compressed, so that they travel with the work tree within the device
	# tool's 64 MiB (about 66 MB plain, a third of that compressed); the
	# check unpacks them.
	gzip -f "$out"/gpu.test "$out"/jsgpu.test "$out"/riotd "$out"/riot-worker || exit 2
	du -ch "$out"/*.gz | tail -n 1
	echo "built into $out; on the GPU machine: RIOT_BIN_DIR=$out scripts/gpu-check.sh"
	exit 0
fi

work=$(mktemp -d)
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do
		kill -TERM "$p" 2>/dev/null
	done
	for p in "${pids[@]}"; do
		wait "$p" 2>/dev/null
	done
	rm -rf "$work"
}
trap cleanup EXIT

# Every step's time limit is capped by what is left of 290 seconds.
limit() {
	local left=$((290 - SECONDS))
	if [ "$left" -lt 1 ]; then left=1; fi
	if [ "$1" -lt "$left" ]; then echo "$1"; else echo "$left"; fi
}

# row prints one line of the final table.
rows=()
row() { rows+=("$(printf '%-34s %s' "$1" "$2")"); }
table() {
	echo
	echo "== riot gpu check"
	local r
	for r in "${rows[@]}"; do echo "$r"; done
}

fail=0
n=${RIOT_GPU_BENCH_N:-4096}
have_go=1
command -v go >/dev/null || have_go=0

# --- 1. build ---
echo "== build (CGO_ENABLED=0)"
bin=${GPU_TEST_BINARY:-}
bindir=${RIOT_BIN_DIR:-}
if [ -n "$bin" ]; then
	bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
fi
if [ -n "$bindir" ]; then
	bindir=$(cd "$bindir" && pwd)
	if ls "$bindir"/*.gz >/dev/null 2>&1; then # from --build: unpack
		mkdir -p "$work/bin"
		for z in "$bindir"/*.gz; do
			gzip -dc "$z" >"$work/bin/$(basename "$z" .gz)" && chmod +x "$work/bin/$(basename "$z" .gz)" || exit 2
		done
		bindir=$work/bin
	fi
	if [ -z "$bin" ] && [ -x "$bindir/gpu.test" ]; then
		bin=$bindir/gpu.test # from --build
	fi
fi
if [ $have_go -eq 0 ] && { [ -z "$bin" ] || [ -z "$bindir" ]; }; then
	if [ -z "$bin" ]; then
		echo "gpu-check: go not found; build the binaries elsewhere and set GPU_TEST_BINARY (and RIOT_BIN_DIR)" >&2
		exit 2
	fi
	echo "(go not found: only package gpu is checked; set RIOT_BIN_DIR for the rest)"
fi
build="ok"
if [ $have_go -eq 1 ]; then
	t=$(limit 120)
	if [ -z "$bin" ]; then
		if CGO_ENABLED=0 timeout "$t" go vet ./gpu/ &&
			CGO_ENABLED=0 timeout "$t" go test -c -o "$work/gpu.test" ./gpu/; then
			bin=$work/gpu.test
		else
			echo "gpu-check: build failed (package gpu)" >&2
			exit 2
		fi
	else
		build="prebuilt gpu test binary"
	fi
	if [ -z "$bindir" ]; then
		mkdir -p "$work/bin"
		if CGO_ENABLED=0 timeout "$(limit 120)" go build -o "$work/bin/" ./cmd/riotd ./cmd/riot-worker &&
			CGO_ENABLED=0 timeout "$(limit 120)" go test -c -o "$work/bin/jsgpu.test" ./engine/jsgpu/; then
			bindir=$work/bin
		else
			echo "gpu-check: build failed (riotd, riot-worker or package engine/jsgpu)" >&2
			exit 2
		fi
	else
		build="$build, prebuilt riotd and riot-worker"
	fi
else
	build="prebuilt"
fi
row "build" "$build"

# --- the libraries ---
# cuBLAS, cuSOLVER, cuSPARSE and NVRTC may be where the loader does not
# look: the toolkit's lib64 outside the ld.so cache, or Python's nvidia
# packages (nvidia/cu13/lib, nvidia/*/lib). Their folders go on
# LD_LIBRARY_PATH for the processes below, so that the libraries' own
# dependencies (cublasLt, nvJitLink, nvrtc-builtins) are found too.
libdirs=()
for lib in libcublas.so.13 libcublas.so.12 libcusolver.so.12 libcusolver.so.11 libcusparse.so.12 \
	libnvrtc.so.13 libnvrtc.so.12 libnvJitLink.so.13 libnvJitLink.so.12 libcublasLt.so.13 libcublasLt.so.12; do
	while IFS= read -r f; do
		d=$(dirname "$f")
		case " ${libdirs[*]} " in *" $d "*) ;; *) libdirs+=("$d") ;; esac
	done < <(find ${CUDA_HOME:+"$CUDA_HOME"} /usr/local/cuda /usr/local/cuda-* /usr/lib/x86_64-linux-gnu /opt /usr/local/lib /usr/lib/python3* \
		-maxdepth 7 -name "$lib" 2>/dev/null | head -n 3)
done
if [ ${#libdirs[@]} -gt 0 ]; then
	LD_LIBRARY_PATH=$(IFS=:; echo "${libdirs[*]}")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	export LD_LIBRARY_PATH
	echo "== CUDA libraries in: ${libdirs[*]}"
else
	echo "== CUDA libraries: none found outside the loader's own search"
fi

# --- 2. the driver ---
echo "== driver"
if command -v nvidia-smi >/dev/null; then
	nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
else
	echo "(nvidia-smi not found)"
fi
(cd gpu && timeout "$(limit 30)" "$bin" -test.run '^TestReal_Devices$' -test.v -test.count=1) >"$work/driver.log" 2>&1
if grep -q -- '--- SKIP' "$work/driver.log"; then
	why=$(grep -m1 -E 'real_test.go:[0-9]+: ' "$work/driver.log" | sed -E 's/^.*real_test.go:[0-9]+: //')
	echo "gpu-check: no usable CUDA driver here: ${why:-$(tail -n 5 "$work/driver.log")}"
	echo "gpu-check: nothing more to check on this machine; run this script on one with an NVIDIA GPU and driver."
	row "driver" "none: ${why:-see the log above}"
	table
	exit 3
fi
grep -E 'real_test.go:[0-9]+: device' "$work/driver.log" | sed -E 's/^.*real_test.go:[0-9]+: //'
if ! grep -q -- '--- PASS' "$work/driver.log"; then
	fail=1
	echo "gpu-check: the driver is there, but listing its devices failed:"
	tail -n 30 "$work/driver.log"
fi
devices=$(grep -cE 'real_test.go:[0-9]+: device' "$work/driver.log")
row "driver" "$devices device(s): $(grep -m1 -E 'real_test.go:[0-9]+: device 0' "$work/driver.log" | sed -E 's/^.*device 0: //')"

# --- 3. real-driver tests ---
echo "== gpu tests (RIOT_GPU_REAL=1)"
t=$(limit 90)
(cd gpu && RIOT_GPU_REAL=1 timeout "$t" "$bin" -test.count=1 -test.v -test.timeout="$((t > 10 ? t - 5 : t))s") >"$work/test.log" 2>&1
test_rc=$?
grep -E '^\s*--- (FAIL|SKIP)|^(FAIL|ok|PASS)$|real_test.go:[0-9]+: (device|cuBLAS|cuSOLVER|cuSPARSE|NVRTC)' "$work/test.log"
if [ $test_rc -ne 0 ]; then
	fail=1
	echo "-- test log (last 60 lines)"
	tail -n 60 "$work/test.log"
fi
passed=$(grep -cE '^\s*--- PASS' "$work/test.log")
skipped=$(grep -cE '^\s*--- SKIP' "$work/test.log")
failed=$(grep -cE '^\s*--- FAIL' "$work/test.log")
if grep -qE '^\s*--- SKIP: (TestReal_|BenchmarkReal)' "$work/test.log"; then
	fail=1 # a real-driver test that did not run is no pass
	echo "gpu-check: real-driver tests were skipped:"
	grep -E '^\s*--- SKIP: (TestReal_|BenchmarkReal)' -A 2 "$work/test.log"
fi
row "gpu tests" "$passed passed, $skipped skipped, $failed failed (exit $test_rc)"

if [ -n "$bindir" ]; then
	echo "== jsgpu binding test (RIOT_GPU_REAL=1)"
	t=$(limit 45)
	(cd engine/jsgpu && RIOT_GPU_REAL=1 timeout "$t" "$bindir/jsgpu.test" -test.run '^TestGPUReal' -test.count=1 -test.v) >"$work/engine.log" 2>&1
	engine_rc=$?
	grep -E '^\s*--- (PASS|FAIL|SKIP)' "$work/engine.log"
	if [ $engine_rc -ne 0 ]; then
		fail=1
		echo "-- jsgpu test log (last 40 lines)"
		tail -n 40 "$work/engine.log"
		row "jsgpu binding test" "FAILED (exit $engine_rc)"
	else
		row "jsgpu binding test" "ok"
	fi
else
	row "jsgpu binding test" "not run (no riot binaries)"
fi

# --- 4. the job scripts against riotd and riot-worker ---
# check SCRIPT PATTERN...: each extended regular expression must match a line
# of the script's output.
scripts_ok=0
scripts_run=0
check_script() {
	local name=$1
	shift
	local out=$work/$name.out
	scripts_run=$((scripts_run + 1))
	echo "-- $name.js"
	timeout "$(limit 60)" "$bindir/riot-worker" eval --quiet --tracker "$addr" "scripts/$name.js" "${script_args[@]}" >"$out" 2>"$work/$name.err"
	local rc=$?
	cat "$out"
	local ok=1 p
	[ $rc -eq 0 ] || ok=0
	grep -q '^No GPU' "$out" && ok=0
	for p in "$@"; do
		grep -qE -- "$p" "$out" || { ok=0; echo "   (no line matches: $p)"; }
	done
	if [ $ok -eq 1 ]; then
		scripts_ok=$((scripts_ok + 1))
	else
		fail=1
		echo "   FAILED (exit $rc); stderr:"
		tail -n 20 "$work/$name.err"
		failed_scripts+=("$name")
	fi
}
failed_scripts=()
if [ -n "$bindir" ]; then
	echo "== job scripts (riotd + riot-worker on loopback)"
	"$bindir/riotd" --listen 127.0.0.1:0 --memory --name gpu-check >"$work/riotd.log" 2>&1 &
	pids+=($!)
	addr=""
	for _ in $(seq 100); do
		addr=$(grep -m1 -oE 'msg="riotd listening" addr=[^ ]+' "$work/riotd.log" | sed 's/.*addr=//')
		[ -n "$addr" ] && break
		sleep 0.1
	done
	if [ -z "$addr" ]; then
		echo "gpu-check: riotd did not start:"
		cat "$work/riotd.log"
		fail=1
		row "job scripts" "not run (riotd did not start)"
	else
		"$bindir/riot-worker" --name gpu-check --slots 4 "$addr" >"$work/worker.log" 2>&1 &
		pids+=($!)
		for _ in $(seq 200); do
			grep -q 'worker: ready' "$work/worker.log" && break
			sleep 0.1
		done
		grep -E 'worker: (GPU|no GPUs|ready)' "$work/worker.log"
		script_args=()
		check_script gpu-finding '^> deviceCount\(\)$' "^RaftError: deviceResources: no device [0-9]+ among $devices$"
		check_script gpu-resources '^\[DeviceResources device 0\]$' '^false$' '^\[ [0-9]+ \]$'
		check_script gpu-timing '^\[ 2, true \]$'
		check_script gpu-worker '^\[ 2, 1 \]$'
		check_script gpu-fanning '^worker 0: 2 rows$' '^worker 0: 1 rows$' '^worker 1: 1 rows$' '^worker 2: 2 rows$'
		check_script gpu-failures "^\[ \[ 1, 'logic', 'deviceResources: no device [0-9]+ among $devices' \] \]$"
		check_script gpu-saxpy 'max \|y - host\| = 0, ok$'
		script_args=("$n" 5)
		check_script gpu-gemm '^float32: .* check ok$' '^float64: .* check ok$'
		script_args=("$n" 8)
		check_script gpu-fanout '^fan-out on device 0, .* overlap [0-9.]+, check ok$'
		if [ ${#failed_scripts[@]} -eq 0 ]; then
			row "job scripts" "$scripts_ok of $scripts_run ok"
		else
			row "job scripts" "$scripts_ok of $scripts_run ok; failed: ${failed_scripts[*]}"
		fi
		for dtype in float32 float64; do
			tf=$(grep -m1 -E "^$dtype: " "$work/gpu-gemm.out" | sed -E 's/^[a-z0-9]+: ([^ ]+) TFLOP.*/\1/')
			row "gpu-gemm.js $dtype n=$n" "${tf:-?} TFLOP/s (matMul, best of 5)"
		done
	fi
else
	row "job scripts" "not run (no riot binaries)"
fi

# --- 5. benchmark ---
echo "== benchmark"
(cd gpu && RIOT_GPU_REAL=1 RIOT_GPU_BENCH_N="$n" timeout "$(limit 120)" "$bin" -test.run '^$' -test.bench '^Benchmark(Sync|Copy|Gemm|FanOut)$' -test.benchtime 1s -test.count=1) >"$work/bench.log" 2>&1
bench_rc=$?
grep -E '^Benchmark|FAIL|skip' "$work/bench.log"
if [ $bench_rc -ne 0 ]; then
	fail=1
	echo "-- benchmark log (last 40 lines)"
	tail -n 40 "$work/bench.log"
	row "benchmark" "failed (exit $bench_rc)"
fi
# riot's figures as "KEY VALUE" lines, the keys of scripts/gpu/anchor.c.
awk '
/^Benchmark/ {
	name = $1; sub(/-[0-9]+$/, "", name); sub(/^Benchmark/, "", name)
	for (i = 2; i <= NF; i++) v[$i] = $(i-1)
	if (name == "Sync/idle") printf "sync_us %.2f\n", v["ns/op"] / 1000
	else if (name == "Sync/empty_kernel") printf "launch_us %.2f\n", v["ns/op"] / 1000
	else if (name ~ /^Copy\/HtoD_.*_staged$/) printf "htod_gbs %.2f\n", v["MB/s"] / 1000
	else if (name ~ /^Copy\/DtoH_.*_staged$/) printf "dtoh_gbs %.2f\n", v["MB/s"] / 1000
	else if (name ~ /^Copy\/HtoD_.*_pageable$/) printf "htod_pageable_gbs %.2f\n", v["MB/s"] / 1000
	else if (name ~ /^Copy\/DtoH_.*_pageable$/) printf "dtoh_pageable_gbs %.2f\n", v["MB/s"] / 1000
	else if (name ~ /^Gemm\/float32_/) print "sgemm", v["TFLOP/s"]
	else if (name ~ /^Gemm\/float64_/) print "dgemm", v["TFLOP/s"]
	else if (name ~ /^Gemm\/tf32_/) print "tf32", v["TFLOP/s"]
	else if (name ~ /^Gemm\/bf16_/) print "bf16", v["TFLOP/s"]
	else if (name ~ /^Gemm\/f16_/) print "f16", v["TFLOP/s"]
	else if (name == "FanOut") { print "fan_one_ms", v["one_ms"]; print "fan_four_ms", v["four_ms"]; print "overlap", v["overlap"] }
	delete v
}' "$work/bench.log" >"$work/riot.fig"

# --- 6. the anchor: the same copies and products from C, and PyTorch ---
# scripts/gpu/anchor.c is built here against the CUDA toolkit (its
# headers, libcublas, and libcuda's link stub) and times, without riot,
# what the benchmarks above time; riot's figures are printed as fractions
# of its. PyTorch, where it is installed, is a second column.
echo "== anchor (C against the CUDA toolkit)"
toolkit=""
for d in ${CUDA_HOME:+"$CUDA_HOME"} /usr/local/cuda-13.0 /usr/local/cuda /usr/local/cuda-*; do
	if [ -f "$d/include/cublas_v2.h" ] && [ -f "$d/include/cuda.h" ]; then
		toolkit=$d
		break
	fi
done
: >"$work/anchor.fig"
anchor_state="not built: no CUDA toolkit (include/cuda.h, cublas_v2.h) found"
if [ -n "$toolkit" ]; then
	cc=""
	for c in gcc cc clang; do # nvcc would need one of them as its host compiler
		if command -v "$c" >/dev/null; then
			cc=$c
			break
		fi
	done
	if [ -z "$cc" ]; then
		anchor_state="not built: no C compiler (gcc, cc, clang)"
	elif {
		# The toolkit's link names (libcublas.so, the stub libcuda.so), else
		# the libraries' sonames, libcuda's from the driver's folders.
		timeout "$(limit 60)" "$cc" -O2 -o "$work/anchor" scripts/gpu/anchor.c -I"$toolkit/include" \
			-L"$toolkit/lib64" -L"$toolkit/lib64/stubs" -lcublas -lcuda -Wl,-rpath,"$toolkit/lib64" >"$work/anchor-build.log" 2>&1 ||
			timeout "$(limit 60)" "$cc" -O2 -o "$work/anchor" scripts/gpu/anchor.c -I"$toolkit/include" \
				-L"$toolkit/lib64" -L/usr/local/nvidia/lib64 -L/usr/lib/x86_64-linux-gnu -L/usr/lib64 \
				-l:libcublas.so.13 -l:libcuda.so.1 -Wl,-rpath,"$toolkit/lib64" >>"$work/anchor-build.log" 2>&1
	}; then
		timeout "$(limit 60)" "$work/anchor" "$n" "${RIOT_GPU_BENCH_MIB:-64}" 1 >"$work/anchor.out" 2>&1
		anchor_rc=$?
		cat "$work/anchor.out"
		sed -nE 's/^anchor ([a-z0-9_]+) ([0-9.]+)$/\1 \2/p' "$work/anchor.out" >"$work/anchor.fig"
		if [ $anchor_rc -eq 0 ]; then
			anchor_state="ok ($cc, $toolkit)"
		else
			anchor_state="FAILED (exit $anchor_rc): $(tail -n 1 "$work/anchor.out")"
		fi
	else
		anchor_state="not built ($cc): $(tail -n 3 "$work/anchor-build.log" | tr '\n' ' ')"
		cat "$work/anchor-build.log"
	fi
fi
row "anchor (C, cuBLAS)" "$anchor_state"
: >"$work/torch.fig"
py=$(command -v python3 || true)
if [ -n "$py" ]; then
	timeout "$(limit 90)" "$py" scripts/gpu/anchor_torch.py "$n" "${RIOT_GPU_BENCH_MIB:-64}" 1 >"$work/torch.out" 2>&1
	torch_rc=$?
	sed -nE 's/^torch ([a-z0-9_]+) ([0-9.]+)$/\1 \2/p' "$work/torch.out" >"$work/torch.fig"
	case $torch_rc in
	0) row "anchor (PyTorch)" "ok, $(grep -m1 '^torch version' "$work/torch.out" | sed 's/^torch //')" ;;
	2) row "anchor (PyTorch)" "not installed (or no CUDA device for it)" ;;
	*) row "anchor (PyTorch)" "failed (exit $torch_rc): $(tail -n 1 "$work/torch.out")" ;;
	esac
else
	row "anchor (PyTorch)" "no python3"
fi

# The comparison: riot, the C anchor, riot as a fraction of it, PyTorch,
# and the goal. A goal not met is reported, not a failure of the check.
fig() { awk -v k="$1" '$1 == k { print $2; exit }' "$2"; }
cmp_rows=()
goals_met=0
goals=0
compare() { # KEY LABEL UNIT GOAL (">=F": riot/C at least F; "<=X": riot's figure at most X; "" none)
	local key=$1 label=$2 unit=$3 goal=$4
	local rv cv tv ratio verdict=""
	rv=$(fig "$key" "$work/riot.fig")
	cv=$(fig "$key" "$work/anchor.fig")
	tv=$(fig "$key" "$work/torch.fig")
	ratio=""
	if [ -n "$rv" ] && [ -n "$cv" ]; then
		ratio=$(awk -v r="$rv" -v c="$cv" -v u="$unit" 'BEGIN { if (c > 0) printf "%.2f", (u == "us" ? c / r : r / c) }')
	fi
	case $goal in
	">="*)
		goals=$((goals + 1))
		if [ -n "$ratio" ] && awk -v r="$ratio" -v g="${goal#>=}" 'BEGIN { exit !(r >= g) }'; then
			verdict="met (>= ${goal#>=})"
			goals_met=$((goals_met + 1))
		else
			verdict="NOT met (>= ${goal#>=})"
		fi
		;;
	"<="*)
		goals=$((goals + 1))
		if [ -n "$rv" ] && awk -v r="$rv" -v g="${goal#<=}" 'BEGIN { exit !(r <= g) }'; then
			verdict="met (<= ${goal#<=} $unit)"
			goals_met=$((goals_met + 1))
		else
			verdict="NOT met (<= ${goal#<=} $unit)"
		fi
		;;
	esac
	cmp_rows+=("$(printf '%-30s %10s %10s %8s %10s  %s' "$label" "${rv:--}" "${cv:--}" "${ratio:--}" "${tv:--}" "$verdict")")
}
compare htod_gbs "host->device staged (GB/s)" "GB/s" ">=0.80"
compare dtoh_gbs "device->host staged (GB/s)" "GB/s" ">=0.80"
compare htod_pageable_gbs "host->device pageable (GB/s)" "GB/s" ""
compare dtoh_pageable_gbs "device->host pageable (GB/s)" "GB/s" ""
compare sync_us "sync, idle stream (us)" "us" "<=10"
compare launch_us "launch + sync, empty (us)" "us" ""
compare sgemm "sgemm n=$n (TFLOP/s)" "TFLOP/s" ">=0.95"
compare dgemm "dgemm n=$n (TFLOP/s)" "TFLOP/s" ""
compare tf32 "tf32 n=$n (TFLOP/s)" "TFLOP/s" ""
compare bf16 "bf16 n=$n (TFLOP/s)" "TFLOP/s" ">=0.90"
compare f16 "f16 n=$n (TFLOP/s)" "TFLOP/s" ">=0.90"
js_ov=$(sed -nE 's/^fan-out on .*: one workunit ([0-9.]+) ms, four at once ([0-9.]+) ms, overlap ([0-9.]+), .*/\3 (one \1 ms, four \2 ms)/p' "$work/gpu-fanout.out" 2>/dev/null)
[ -n "$js_ov" ] || js_ov="- (not run)"
ov=$(fig overlap "$work/riot.fig")
goals=$((goals + 1))
if [ -n "$ov" ] && awk -v o="$ov" 'BEGIN { exit !(o >= 1.5) }'; then
	goals_met=$((goals_met + 1))
	ov_verdict="met (>= 1.5)"
else
	ov_verdict="NOT met (>= 1.5)"
fi
cmp_rows+=("$(printf '%-30s %10s %10s %8s %10s  %s' "fan-out: 4 streams, overlap" "${ov:--}" "-" "-" "-" "$ov_verdict; one $(fig fan_one_ms "$work/riot.fig") ms, four $(fig fan_four_ms "$work/riot.fig") ms")")
cmp_rows+=("$(printf '%-30s %10s %10s %8s %10s  %s' "fan-out: 4 workunits (JS)" "${js_ov%% *}" "-" "-" "-" "gpu-fanout.js ${js_ov#* }")")
row "speed goals" "$goals_met of $goals met (not a failure of the check)"
row "total time" "${SECONDS} s"
table
echo
echo "== riot against the anchor (riot/C: a fraction of C's speed; for sync, C's time over riot's)"
printf '%-30s %10s %10s %8s %10s  %s\n' "what" "riot" "C" "riot/C" "PyTorch" "goal"
for r in "${cmp_rows[@]}"; do echo "$r"; done
exit $fail
