package gpu

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"

	"github.com/ebitengine/purego"
)

// Option configures Open.
type Option func(*config)

type config struct {
	driverPath string // "" means RIOT_CUDA_LIBRARY, then libcuda.so.1
	libPaths   [numLibraries]string
	cudaHome   string
	logger     *slog.Logger

	stageChunk   int    // bytes per staging buffer; 0: copies are not staged
	stageBuffers int    // staging buffers per Resources, at most
	chunkHook    func() // tests only: called after each staged chunk is queued
}

// WithDriverLibrary loads the CUDA driver from path instead of
// $RIOT_CUDA_LIBRARY or the dynamic loader's search for libcuda.so.1.
func WithDriverLibrary(path string) Option {
	return func(c *config) { c.driverPath = path }
}

// WithLibrary loads lib from path instead of its environment variable
// (RIOT_CUBLAS_LIBRARY, RIOT_CUSOLVER_LIBRARY, RIOT_CUSPARSE_LIBRARY,
// RIOT_NVRTC_LIBRARY) or the standard search.
func WithLibrary(lib Library, path string) Option {
	return func(c *config) {
		if lib > 0 && int(lib) < numLibraries {
			c.libPaths[lib] = path
		}
	}
}

// WithLogger sets the logger for the few events worth a line: resources
// released by the garbage collector instead of Close. The default is
// slog.Default().
func WithLogger(l *slog.Logger) Option {
	return func(c *config) { c.logger = l }
}

// DeviceInfo describes one device as the driver reports it.
type DeviceInfo struct {
	Ordinal     int    // the device's number, from 0
	Name        string // e.g. "NVIDIA H200"
	TotalMemory uint64 // bytes
	Major       int    // compute capability, major
	Minor       int    // compute capability, minor
	MemoryPools bool   // whether stream-ordered allocation (cuMemAllocAsync) is used
}

// Driver is the loaded CUDA driver: its entry points, its devices, the
// libraries loaded on first use, and one locked OS thread per device in
// use. Make one with Open and share it; it is safe for concurrent use.
//
// The dynamic loader keeps libcuda and the libraries mapped for the life of
// the process (unloading CUDA under running threads is not safe), so
// several Drivers in one process share the loaded code but not their
// devices' threads, resources or caches.
type Driver struct {
	cfg     config
	api     *cudaAPI // nil when unavailable
	err     error    // why the driver is unavailable; nil otherwise
	version int
	devices []DeviceInfo
	libs    libSet
	kernels kernelCache

	life    sync.RWMutex // held shared while resources are made, exclusively by Close
	mu      sync.Mutex
	closed  bool
	workers map[int]*device        // started on first use; guarded by mu
	live    map[*resState]struct{} // open resources; guarded by mu
}

// Open loads the CUDA driver (libcuda.so.1, or the path in
// RIOT_CUDA_LIBRARY or WithDriverLibrary), initializes it and reads its
// devices. It never returns a nil *Driver: on a host without a usable
// driver it returns one with no devices, together with an error that wraps
// ErrUnavailable and says why (the dlopen message, a missing symbol, or
// cuInit's error). Such a Driver answers DeviceCount with 0 and every
// request for resources with a Logic error that carries the same reason.
//
// cuBLAS, cuSOLVER, cuSPARSE and NVRTC are not loaded here but on first
// use.
func Open(opts ...Option) (*Driver, error) {
	cfg := config{
		driverPath:   os.Getenv(driverEnvVar),
		cudaHome:     os.Getenv("CUDA_HOME"),
		stageChunk:   defaultStagingChunk,
		stageBuffers: defaultStagingBuffers,
	}
	for lib := CUBLAS; int(lib) < numLibraries; lib++ {
		cfg.libPaths[lib] = os.Getenv(lib.envVar())
	}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.logger == nil {
		cfg.logger = slog.Default()
	}
	d := &Driver{cfg: cfg, workers: map[int]*device{}, live: map[*resState]struct{}{}}
	if err := d.load(); err != nil {
		d.err = fmt.Errorf("%w: %w", ErrUnavailable, err)
		d.api = nil
		d.devices = nil
		return d, d.err
	}
	return d, nil
}

// load binds and initializes the driver and reads its devices.
func (d *Driver) load() error {
	path := d.cfg.driverPath
	if path == "" {
		path = driverSoname
	}
	h, _, err := dlopen("the CUDA driver", []string{path}, nil)
	if err != nil {
		return err
	}
	api := &cudaAPI{}
	if err := bind(h, path, api.symbols()); err != nil {
		_ = purego.Dlclose(h)
		return err
	}
	d.api = api
	if err := api.check("cuInit", api.cuInit(0)); err != nil {
		return err
	}
	var v int32
	if err := api.check("cuDriverGetVersion", api.cuDriverGetVersion(&v)); err != nil {
		return err
	}
	d.version = int(v)
	var n int32
	if err := api.check("cuDeviceGetCount", api.cuDeviceGetCount(&n)); err != nil {
		return err
	}
	for i := range int(n) {
		info, err := d.readDevice(i)
		if err != nil {
			return err
		}
		d.devices = append(d.devices, info)
	}
	return nil
}

// readDevice asks the driver about device i; none of these calls needs a
// context.
func (d *Driver) readDevice(i int) (DeviceInfo, error) {
	api := d.api
	var dev int32
	if err := api.check("cuDeviceGet", api.cuDeviceGet(&dev, int32(i))); err != nil {
		return DeviceInfo{}, err
	}
	name := make([]byte, 256)
	if err := api.check("cuDeviceGetName", api.cuDeviceGetName(&name[0], int32(len(name)), dev)); err != nil {
		return DeviceInfo{}, err
	}
	var mem uintptr
	if err := api.check("cuDeviceTotalMem_v2", api.cuDeviceTotalMem(&mem, dev)); err != nil {
		return DeviceInfo{}, err
	}
	attr := func(a int32) (int, error) {
		var v int32
		err := api.check("cuDeviceGetAttribute", api.cuDeviceGetAttribute(&v, a, dev))
		return int(v), err
	}
	major, err := attr(attrComputeCapabilityMajor)
	if err != nil {
		return DeviceInfo{}, err
	}
	minor, err := attr(attrComputeCapabilityMinor)
	if err != nil {
		return DeviceInfo{}, err
	}
	pools, err := attr(attrMemoryPoolsSupported)
	if err != nil {
		pools = 0 // an older driver without the attribute: plain allocation
	}
	return DeviceInfo{
		Ordinal:     i,
		Name:        goString(&name[0]),
		TotalMemory: uint64(mem),
		Major:       major,
		Minor:       minor,
		MemoryPools: pools != 0 && api.hasAsyncAlloc(),
	}, nil
}

// Err returns why the driver is unavailable (wrapping ErrUnavailable), or
// nil when it loaded.
func (d *Driver) Err() error { return d.err }

// DeviceCount returns the number of visible devices, numbered from 0; it
// is 0 when the driver is unavailable. It is deviceCount in JavaScript.
func (d *Driver) DeviceCount() int { return len(d.devices) }

// Version returns the driver's CUDA version as cuDriverGetVersion reports
// it (e.g. 13000 for 13.0), or 0 when the driver is unavailable.
func (d *Driver) Version() int { return d.version }

// Device describes device i. A device the driver does not report is a
// Logic error: "deviceInfo: no device 4 among 1".
func (d *Driver) Device(i int) (DeviceInfo, error) {
	if err := d.checkDevice(i); err != nil {
		return DeviceInfo{}, opError(OpDeviceInfo, err)
	}
	return d.devices[i], nil
}

// checkDevice returns the error for a device that is not there.
func (d *Driver) checkDevice(i int) error {
	if i >= 0 && i < len(d.devices) {
		return nil
	}
	if d.err != nil {
		return fmt.Errorf("no device %d among 0: %w", i, d.err)
	}
	return fmt.Errorf("no device %d among %d", i, len(d.devices))
}

// errDriverClosed is returned by operations on a closed Driver.
var errDriverClosed = errors.New("driver closed")

// worker returns the running device thread of device i, starting it on
// first use.
func (d *Driver) worker(i int) (*device, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, errDriverClosed
	}
	if w := d.workers[i]; w != nil {
		return w, nil
	}
	w, err := startDevice(d.api, i)
	if err != nil {
		return nil, err
	}
	d.workers[i] = w
	return w, nil
}

// Close releases every open Resources of the Driver (as their Close does),
// then stops its device threads, unloads its kernel modules and releases
// its references to the devices' primary contexts. Later calls return nil;
// later operations fail with a Logic error. Close is safe to call
// concurrently with other methods, which then either finish first or fail.
func (d *Driver) Close() error {
	d.life.Lock()
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		d.life.Unlock()
		return nil
	}
	d.closed = true
	var open []*resState
	for s := range d.live {
		open = append(open, s)
	}
	workers := d.workers
	d.workers = nil
	d.mu.Unlock()
	d.life.Unlock()

	var errs []error
	for _, s := range open {
		errs = append(errs, s.close())
	}
	for _, w := range workers {
		errs = append(errs, w.stop())
	}
	return errors.Join(errs...)
}

// track and untrack keep the set of open resources for Close.
func (d *Driver) track(s *resState) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return errDriverClosed
	}
	d.live[s] = struct{}{}
	return nil
}

func (d *Driver) untrack(s *resState) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.live, s)
}

// loadLibrary loads lib for this Driver on first use.
func (d *Driver) loadLibrary(lib Library) error {
	return d.libs.load(lib, d.cfg.libPaths[lib], d.cfg.cudaHome, d.version/1000)
}

// LibraryPath returns the file lib was loaded from, once a first use has
// loaded it; "" before that, or when loading failed.
func (d *Driver) LibraryPath(lib Library) string {
	if lib <= 0 || int(lib) >= numLibraries {
		return ""
	}
	return d.libs.loadedPath(lib)
}
