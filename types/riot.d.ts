// riot.d.ts: the globals that riot job scripts and workunits see, for
// editors and for tsc. Print this file with `riot-worker types > riot.d.ts`
// and list it in a tsconfig.json or jsconfig.json (docs/getting-started.md).
//
// A job script (riot-worker eval SCRIPT) and a workunit (the function it
// sends to a worker) share one list of globals here. What only one of them
// has says so: riot.worker is a workunit's; riot.readFile, require and the
// tracker connections are a job script's; the GPU functions are a
// workunit's, on any worker (with zero devices where there is no GPU).
//
// Besides these, both have the ECMAScript built-ins (lib ES2022).

/** Types of the riot API. */
declare namespace riot {
  /**
   * A workunit's id: its key in hex, as riot.doWork returns it and
   * riot.waitUntilDone takes it. R is the type of its result, when known.
   */
  type WorkunitId<R = any> = string & { readonly __riotResult?: R };

  /** Options of riot.with, riot.forWork and riot.doWorkEval. */
  interface WorkOptions {
    /** Run on a worker with this many free GPUs (0 to 64). Such work waits while no worker has them. */
    gpus?: number;
    /** Run every call as a workunit of its own, even if the same work finished before or is running now. */
    noCache?: boolean;
    /** A time limit: a duration ('30s', '1m30s', '250ms') or milliseconds. */
    timeout?: string | number;
    /**
     * Run a failed workunit up to this many more times (0 to 100), on another worker when one is free,
     * before it fails for good. Counted by the tracker, per workunit; a lost worker is no attempt.
     */
    retries?: number;
    /**
     * Retry only errors of these names ('TypeError', 'NetworkError', 'TimeoutError') or classes
     * (TypeError, a class of the script's, by its name); without it every thrown error and the time
     * limit (TimeoutError) are retried. Needs retries.
     */
    retryOn?: (string | (abstract new (...args: any[]) => Error))[];
  }

  /** What WorkunitError.kind says about a failed workunit. */
  type ErrorKind =
    | 'thrown'
    | 'time-limit'
    | 'stack-limit'
    | 'memory-limit'
    | 'result-limit'
    | 'unsendable'
    | 'invalid'
    | 'workers-lost'
    | 'canceled'
    | 'internal'
    | (string & {});

  /** One failed attempt of a workunit retried with riot.with({retries}). */
  interface Attempt {
    /** The worker that ran it. */
    worker: string;
    /** The error's name and message. */
    name: string;
    message: string;
  }

  /** The error of a failed workunit, as riot.waitUntilDone throws it and a riot.run promise rejects with it. */
  interface WorkunitError extends Error {
    name: 'WorkunitError';
    /** "workunit 3fa2c1b0e4d5 failed on worker alfred-2: TypeError: x is not a function" */
    message: string;
    /** The workunit's own error, rebuilt with its class, message and stack on the worker. */
    cause: Error;
    /** The workunit's id. */
    workunit: string;
    /** The worker that ran it. */
    worker: string;
    /** Why it failed. */
    kind: ErrorKind;
    /** With retries: every failed attempt, in order, the last one included (messages cut to 1 KiB). */
    attempts?: Attempt[];
  }

  /** The WorkunitError class. */
  interface WorkunitErrorConstructor {
    new (message?: string, props?: Partial<Omit<WorkunitError, 'name' | 'message'>>): WorkunitError;
    readonly prototype: WorkunitError;
  }

  /** A workunit's status, as client.workunitInfo gives it. */
  type Status = 'waiting' | 'running' | 'done' | 'error' | 'unknown';

  /** A workunit taken with client.waitForWork. */
  type Work =
    | { kind: 'fn'; fn: (...args: any[]) => any; args: any[] }
    | { kind: 'eval'; source: string }
    | { kind: 'call'; module: string; source: string; export: string; args: any[] };

  /** A tracker connection with Riot's low-level calls (riot.currentClient(), riot.connectToTracker()). Job scripts only. */
  interface Client {
    /** The name the tracker gave this client. */
    whoAmI(): string;
    /**
     * [status, worker, result, lastChange]: the worker that ran it (or null), the result (the value, the
     * error's message, or null) and when its status last changed (or null).
     */
    workunitInfo(id: string): [Status, string | null, any, Date | null];
    /** Calls fn with the workunit's info, as workunitInfo gives it. */
    callWithWorkunitInfo(id: string, fn: (status: Status, worker: string | null, result: any, lastChange: Date | null) => void): any;
    /** Submits a workunit that calls fn(...args), or evaluates source; returns its id. */
    addWorkunit<A extends any[], R>(fn: (...args: A) => R, ...args: A): WorkunitId<R>;
    addWorkunit(source: string): WorkunitId;
    /** addWorkunit, then calls the last argument with the id on the script's event loop. */
    callWithNewWorkunit(...fnArgsAndCallback: any[]): void;
    /** Takes a workunit as a worker does: [id, work]. */
    waitForWork(): [string, Work];
    /** Completes a workunit taken with waitForWork. */
    completeWorkunit(id: string, isError: boolean, result: any): void;
    /** Waits until the workunit is finished: [id, status, worker, result]. */
    waitForFinishedWorkunit(id: string): [string, Status, string | null, any];
    /** Calls fn when the workunit is finished, with waitForFinishedWorkunit's values. */
    callWithFinishedWorkunit(id: string, fn: (id: string, status: Status, worker: string | null, result: any) => void): any;
    /** Closes the connection. */
    close(): void;
  }

  /** The submitting functions, seed forms and await forms, with options (riot.with). */
  interface Submitters {
    /**
     * Makes a workunit that calls fn(...args) on a worker and returns its id once the tracker holds it.
     * fn travels as its source with the values of its free variables. Seed: do-work.
     */
    doWork<A extends any[], R>(fn: (...args: A) => R, ...args: A): WorkunitId<R>;
    /**
     * Like Array.from(iterable).map(fn), but each call fn(item, index) is a workunit on a worker.
     * Returns the results in order; throws a WorkunitError for the first failed one. Seed: for/work.
     */
    forWork<T, R>(iterable: Iterable<T> | ArrayLike<T>, fn: (item: T, index: number) => R, options?: WorkOptions): Awaited<R>[];
    /**
     * A workunit that calls require(modulePath)[exportName](...args) on a worker; the module (a CommonJS
     * file relative to the script's directory, or a TypeScript or ES module, bundled) and what it requires
     * ship by content. Seed: do-work/call.
     */
    doWorkCall(modulePath: string, exportName: string, ...args: any[]): WorkunitId;
    /** A workunit that evaluates source; its value is the result. Seed: do-work/eval. */
    doWorkEval(source: string, options?: WorkOptions): WorkunitId;
    /** A promise of fn(...args) run as a workunit: riot.waitUntilDone(riot.doWork(fn, ...args)), awaitable. */
    run<A extends any[], R>(fn: (...args: A) => R, ...args: A): Promise<Awaited<R>>;
    /** A promise of the results of riot.forWork(iterable, fn), awaitable. */
    map<T, R>(iterable: Iterable<T> | ArrayLike<T>, fn: (item: T, index: number) => R, options?: WorkOptions): Promise<Awaited<R>[]>;
    /** A promise of riot.doWorkCall(modulePath, exportName, ...args)'s result. */
    runCall(modulePath: string, exportName: string, ...args: any[]): Promise<any>;
    /** A promise of riot.doWorkEval(source)'s result. */
    runEval(source: string, options?: WorkOptions): Promise<any>;
    /** A promise of the result of the workunit id: riot.waitUntilDone(id), awaitable. */
    result<R>(id: WorkunitId<R>): Promise<Awaited<R>>;
    result(id: string): Promise<any>;
  }

  /** What riot.worker says inside a workunit. */
  interface WorkerInfo {
    /** The worker's name. */
    readonly name: string;
    /** The slot running the workunit. */
    readonly slot: number;
    /** The GPU ordinals given to the workunit (all of the host's when it asked for none). */
    readonly gpus: readonly number[];
  }

  /** The riot global. */
  interface Riot extends Submitters {
    /** The script's arguments, after the script's path. Job scripts only. */
    readonly args: string[];
    /** Inside a workunit: the worker running it. */
    readonly worker: WorkerInfo;
    /** The submitting functions with options: {gpus}, {noCache}, {timeout}, {retries, retryOn}. */
    with(options: WorkOptions): Submitters;
    /** Blocks until the workunit is finished; returns its result or throws a WorkunitError. Seed: wait-until-done. */
    waitUntilDone<R>(id: WorkunitId<R>): Awaited<R>;
    waitUntilDone(id: string): any;
    /**
     * Calls fn on the script's event loop when the workunit is finished: isError false with the worker's
     * name and the result, or true with the error's message. Seed: call-when-done.
     */
    callWhenDone(id: string, fn: (isError: boolean, clientName: string, result: any) => void): void;
    /** Cancels this job's workunits that are waiting or running; returns the ids it canceled. */
    cancel(...ids: string[]): string[];
    cancel(ids: string[]): string[];
    /** Connects to a tracker and makes it the current client. Seed: connect-to-riot-server!. */
    connect(host: string, port?: number, name?: string): Client;
    /** The current client, or makes client current. Seed: current-client. */
    currentClient(client?: Client): Client;
    /** A client for the low-level API, not made current. Seed: connect-to-tracker. */
    connectToTracker(host: string, port?: number, name?: string): Client;
    /** A file on the master, as a string, or as bytes with encoding null or 'binary'. Job scripts only. */
    readFile(path: string): string;
    readFile(path: string, encoding: null | 'binary'): Uint8Array;
    readFile(path: string, encoding: string): string;
    /** A file's lines, without line ends. Job scripts only. */
    readLines(path: string): string[];
    /** Writes a string or bytes to a file on the master. Job scripts only. */
    writeFile(path: string, data: string | ArrayBufferView | ArrayBuffer): void;
    /** The class of errors from failed workunits. */
    readonly WorkunitError: WorkunitErrorConstructor;
  }

  /** A GPU device's description (deviceInfo). */
  interface DeviceInfo {
    device: number;
    name: string;
    totalMemory: number;
    major: number;
    minor: number;
    memoryPools: boolean;
  }

  /** Where a GPU function runs: given resources, or a device's current ones. */
  interface Placement {
    resources?: DeviceResources;
    device?: number;
  }

  /**
   * A GPU array's element type. 'bf16' (bfloat16) and 'f16' (IEEE half) are
   * made from float32 data on the device, rounded to nearest even, read back
   * as Float32Array, and multiplied on the tensor cores with float32
   * accumulation.
   */
  type DType = 'float32' | 'float64' | 'bf16' | 'f16';

  /** Options of matrix products. */
  interface ProductOptions {
    resources?: DeviceResources;
    /** float32 products on the tensor cores, inputs rounded to TF32 (10 mantissa bits). */
    tf32?: boolean;
  }

  /** The data a device array can be made from. */
  type ArrayData = ArrayLike<number> | ArrayLike<ArrayLike<number>>;

  /** A grid or block size: a number, [x, y, z] or {x, y, z}; missing sizes are 1. */
  type Dim3 = number | [number, number?, number?] | { x?: number; y?: number; z?: number };

  /** A kernel argument: a device array, or a number with its C type. */
  type KernelArg = DeviceArray | { f32: number } | { f64: number } | { i32: number } | { i64: number | bigint } | bigint;
}

/** The riot object: submitting workunits, waiting for them, the tracker, files. */
declare const riot: riot.Riot;

/** The job's own CommonJS modules, resolved as Node resolves them, run once on the master. Job scripts only. */
declare function require(path: string): any;

/** Sleeps for the given seconds (a number ≥ 0), blocking. */
declare function sleep(seconds: number): void;

/** Calls fn(...args) after ms milliseconds on the event loop; returns the timer's id. */
declare function setTimeout<A extends any[]>(fn: (...args: A) => void, ms?: number, ...args: A): number;
/** Calls fn(...args) every ms milliseconds on the event loop; returns the timer's id. */
declare function setInterval<A extends any[]>(fn: (...args: A) => void, ms?: number, ...args: A): number;
/** Cancels a timer of setTimeout. */
declare function clearTimeout(id: number | undefined): void;
/** Cancels a timer of setInterval. */
declare function clearInterval(id: number | undefined): void;
/** Queues fn as a microtask (a promise job). */
declare function queueMicrotask(fn: () => void): void;

/** The console. A workunit's lines show on the master, prefixed with the worker and the workunit. */
declare const console: {
  /** Prints to stdout, formatted as Node's util.format does. */
  log(...data: any[]): void;
  /** Prints to stdout. */
  info(...data: any[]): void;
  /** Prints to stdout. */
  debug(...data: any[]): void;
  /** Prints to stderr. */
  warn(...data: any[]): void;
  /** Prints to stderr. */
  error(...data: any[]): void;
  /** Prints "Trace: ..." and the stack to stderr. */
  trace(...data: any[]): void;
  /** Prints "Assertion failed" and data to stderr when value is falsy. */
  assert(value: any, ...data: any[]): void;
  /** Prints an inspection of obj to stdout. */
  dir(obj: any, options?: any): void;
  /** Prints tabular data as a table, with the given columns only if given. */
  table(data: any, columns?: string[]): void;
  /** Starts a timer with the label (default 'default'). */
  time(label?: string): void;
  /** Prints the label's elapsed time and ends its timer. */
  timeEnd(label?: string): void;
  /** Prints the label's elapsed time, and data, and keeps its timer running. */
  timeLog(label?: string, ...data: any[]): void;
  /** Prints how many times count was called with the label (default 'default'). */
  count(label?: string): void;
  /** Resets the label's count. */
  countReset(label?: string): void;
  /** Indents the lines printed after it, printing data first if given. */
  group(...data: any[]): void;
  /** As group (a console that prints text cannot collapse it). */
  groupCollapsed(...data: any[]): void;
  /** Ends the innermost group's indentation. */
  groupEnd(): void;
};

/** High-resolution time. */
declare const performance: {
  /** Milliseconds since the workunit (or the script) started, with fractions. */
  now(): number;
};

/** Options of structuredClone. */
interface StructuredSerializeOptions {
  /** Objects whose ownership moves to the clone (ArrayBuffers). */
  transfer?: any[];
}
/** A deep copy of value by the structured clone algorithm (Maps, Sets, Dates, typed arrays, cycles). */
declare function structuredClone<T>(value: T, options?: StructuredSerializeOptions): T;

/** Encodes strings as UTF-8 bytes. */
interface TextEncoder {
  /** Always 'utf-8'. */
  readonly encoding: string;
  /** The UTF-8 bytes of input. */
  encode(input?: string): Uint8Array;
  /** Encodes into dest; says how much was read and written. */
  encodeInto(input: string, dest: Uint8Array): { read: number; written: number };
}
declare var TextEncoder: {
  prototype: TextEncoder;
  /** A UTF-8 encoder. */
  new (): TextEncoder;
};

/** Options of a TextDecoder. */
interface TextDecoderOptions {
  /** Throw a TypeError on malformed input instead of replacing it. */
  fatal?: boolean;
  /** Keep a leading byte order mark. */
  ignoreBOM?: boolean;
}
/** Decodes bytes (UTF-8 and the other encodings it knows) to strings. */
interface TextDecoder {
  /** The encoding's name ('utf-8'). */
  readonly encoding: string;
  /** Whether malformed input throws. */
  readonly fatal: boolean;
  /** Whether a leading byte order mark is kept. */
  readonly ignoreBOM: boolean;
  /** The text of input; with {stream: true} more input follows. */
  decode(input?: ArrayBufferView | ArrayBuffer, options?: { stream?: boolean }): string;
}
declare var TextDecoder: {
  prototype: TextDecoder;
  /** A decoder for the encoding label (default 'utf-8'). */
  new (label?: string, options?: TextDecoderOptions): TextDecoder;
};

/** A parsed URL, as WHATWG defines it. */
interface URL {
  hash: string;
  host: string;
  hostname: string;
  href: string;
  readonly origin: string;
  password: string;
  pathname: string;
  port: string;
  protocol: string;
  search: string;
  readonly searchParams: URLSearchParams;
  username: string;
  /** The href. */
  toString(): string;
  /** The href, for JSON.stringify. */
  toJSON(): string;
}
declare var URL: {
  prototype: URL;
  /** Parses url, relative to base if given; a TypeError if it is not a URL. */
  new (url: string | URL, base?: string | URL): URL;
};

/** A URL's query string, as name-value pairs. */
interface URLSearchParams {
  /** Appends a pair. */
  append(name: string, value: string): void;
  /** Removes the pairs of name. */
  delete(name: string): void;
  /** The first value of name, or null. */
  get(name: string): string | null;
  /** Every value of name. */
  getAll(name: string): string[];
  /** Whether name has a value. */
  has(name: string): boolean;
  /** Sets name's only value. */
  set(name: string, value: string): void;
  /** Sorts the pairs by name. */
  sort(): void;
  /** Calls fn for each pair. */
  forEach(fn: (value: string, name: string, params: URLSearchParams) => void): void;
  /** The names, in order, once per pair. */
  keys(): IterableIterator<string>;
  /** The values, in order. */
  values(): IterableIterator<string>;
  /** The [name, value] pairs, in order. */
  entries(): IterableIterator<[string, string]>;
  /** The [name, value] pairs, in order. */
  [Symbol.iterator](): IterableIterator<[string, string]>;
  /** The query string, without '?'. */
  toString(): string;
}
declare var URLSearchParams: {
  prototype: URLSearchParams;
  /** Pairs from a query string ('a=1&b=2', with or without '?'), an object or [name, value] pairs. */
  new (init?: string | Record<string, string> | Iterable<[string, string]>): URLSearchParams;
};

/** Decodes base64 to a binary string. */
declare function atob(data: string): string;
/** Encodes a binary string (characters up to U+00FF) as base64. */
declare function btoa(data: string): string;

/** Cryptographically strong random values: the class of crypto, which cannot be constructed. */
interface Crypto {
  /** Fills array with random values and returns it (an integer typed array of at most 65,536 bytes). */
  getRandomValues<T extends Int8Array | Uint8Array | Uint8ClampedArray | Int16Array | Uint16Array | Int32Array | Uint32Array | BigInt64Array | BigUint64Array>(array: T): T;
  /** A random version 4 UUID. */
  randomUUID(): string;
}
/** The class of crypto; new Crypto() throws "Illegal constructor", as in Node. */
declare var Crypto: {
  prototype: Crypto;
};
/** Cryptographically strong random values. */
declare const crypto: Crypto;

/** The errors of the web platform's APIs (DataCloneError, InvalidCharacterError, QuotaExceededError, ...). */
interface DOMException extends Error {
  /** The error's name, such as 'DataCloneError'. */
  readonly name: string;
  /** The legacy numeric code of the name (25 for DataCloneError), or 0. */
  readonly code: number;
}
/** Makes a DOMException: new DOMException(message, name). */
declare var DOMException: {
  prototype: DOMException;
  new (message?: string, name?: string): DOMException;
};

// --- WebAssembly (workunits and job scripts; docs/engine.md, WebAssembly) ---

/** The WebAssembly JavaScript API of workunits and job scripts (over wazero); tables are not supported. */
declare namespace WebAssembly {
  /** The bytes of a module. */
  type BufferSource = ArrayBuffer | ArrayBufferView;
  /** What an instance imports: module name to field name to value. */
  type Imports = Record<string, Record<string, any>>;
  /** A compiled module. */
  class Module {
    constructor(bytes: BufferSource);
    /** The module's imports. */
    static imports(module: Module): { module: string; name: string; kind: string }[];
    /** The module's exports. */
    static exports(module: Module): { name: string; kind: string }[];
  }
  /** An instance of a module: its exports, frozen, in the module's order. */
  class Instance {
    constructor(module: Module, imports?: Imports);
    readonly exports: Record<string, any>;
  }
  /** A linear memory; buffer is the memory itself, detached by grow. */
  class Memory {
    constructor(descriptor: { initial: number; maximum?: number });
    readonly buffer: ArrayBuffer;
    /** Grows by delta pages of 64 KiB and returns the old size in pages. */
    grow(delta: number): number;
  }
  /** A global of a value type ('i32', 'i64', 'f32', 'f64'). */
  class Global {
    constructor(descriptor: { value: string; mutable?: boolean }, value?: any);
    value: any;
    valueOf(): any;
  }
  /** A module that does not compile. */
  class CompileError extends Error {}
  /** Imports that do not link. */
  class LinkError extends Error {}
  /** A trap (unreachable, out of bounds, ...). */
  class RuntimeError extends Error {}
  /** Whether bytes are a valid module. */
  function validate(bytes: BufferSource): boolean;
  /** Compiles bytes into a module. */
  function compile(bytes: BufferSource): Promise<Module>;
  /** Compiles and instantiates bytes. */
  function instantiate(bytes: BufferSource, imports?: Imports): Promise<{ module: Module; instance: Instance }>;
  /** Instantiates a compiled module. */
  function instantiate(module: Module, imports?: Imports): Promise<Instance>;
}

// --- GPU (workunits; docs/gpu.md) ---

/** The number of GPU devices of the worker; 0 without a driver. */
declare function deviceCount(): number;
/** A device's name, memory and compute capability; default: the workunit's device. */
declare function deviceInfo(device?: number): riot.DeviceInfo;
/** New resources (a stream and library handles) on a device; default: the workunit's device. */
declare function deviceResources(options?: { device?: number }): DeviceResources;
/** The device of resources, also after they are released. */
declare function resourcesDevice(r: DeviceResources): number;
/** The realm's default resources on a device, made on first use. */
declare function currentDeviceResources(device?: number): DeviceResources;
/** Waits for everything queued on the resources' stream. */
declare function resourcesSync(r: DeviceResources): void;
/** Releases resources now (idempotent); their arrays are freed with them. */
declare function resourcesRelease(r: DeviceResources): void;
/** Calls fn(r) and releases r when it returns, throws, or (for a promise) settles. */
declare function withDeviceResources<R>(r: DeviceResources, fn: (r: DeviceResources) => R): R;
/** Copies data (typed array, numbers, or rows) to a new device array. */
declare function deviceArray(data: riot.ArrayData, options?: riot.Placement & { shape?: number[]; dtype?: riot.DType }): DeviceArray;
/** A zero-filled device array; dtype defaults to 'float64'. */
declare function deviceZeros(shape: number | number[], options?: riot.Placement & { dtype?: riot.DType }): DeviceArray;
/** The array's elements, flat and row-major (float32 for bf16 and f16), after the stream ran what was queued before. */
declare function arrayToHost(a: DeviceArray): Float32Array | Float64Array;
/** Queues a copy of data into a; returns a. */
declare function arrayFromHost(a: DeviceArray, data: riot.ArrayData): DeviceArray;
/** Frees a now (idempotent). */
declare function arrayFree(a: DeviceArray): void;
/** A new array a·b of a's dtype, through cuBLAS. */
declare function matMul(a: DeviceArray, b: DeviceArray, options?: riot.ProductOptions): DeviceArray;
/** c = alpha·op(a)·op(b) + beta·c, through cuBLAS (c may be float32 for bf16 or f16 a and b); returns c. */
declare function gemm(
  a: DeviceArray,
  b: DeviceArray,
  c: DeviceArray,
  options?: riot.ProductOptions & { transA?: boolean; transB?: boolean; alpha?: number; beta?: number },
): DeviceArray;
/** Compiles CUDA C with NVRTC and loads the extern "C" __global__ function name. */
declare function compileKernel(source: string, name: string, options?: riot.Placement & { options?: string[] }): DeviceKernel;
/** Queues a kernel launch; number arguments state their C type ({f32: x}, {i32: n}, ...). */
declare function launchKernel(
  k: DeviceKernel,
  config: riot.Placement & { grid: riot.Dim3; block: riot.Dim3; shared?: number },
  ...args: riot.KernelArg[]
): void;

/** A device's stream and library handles. */
declare class DeviceResources {
  private constructor();
  /** The device. */
  readonly device: number;
  /** Whether the resources were released. */
  readonly released: boolean;
}

/** A row-major float32, float64, bf16 or f16 array on a device. */
declare class DeviceArray {
  private constructor();
  readonly shape: readonly number[];
  readonly dtype: riot.DType;
  /** The element count. */
  readonly length: number;
  readonly device: number;
  readonly resources: DeviceResources;
  /** Whether it was freed, by free or with its resources. */
  readonly freed: boolean;
  /** arrayToHost(this). */
  toHost(): Float32Array | Float64Array;
  /** arrayFromHost(this, data). */
  fromHost(data: riot.ArrayData): DeviceArray;
  /** arrayFree(this). */
  free(): void;
}

/** A compiled CUDA kernel, launchable on any device. */
declare class DeviceKernel {
  private constructor();
  readonly name: string;
  readonly source: string;
  readonly options: readonly string[];
}

/** A GPU error: kind 'logic' or 'out-of-memory', the function (op) and the CUDA status (code). */
declare class RaftError extends Error {
  constructor(message?: string, options?: { kind?: 'logic' | 'out-of-memory'; op?: string; code?: number });
  name: 'RaftError';
  kind: 'logic' | 'out-of-memory';
  op: string;
  code: number;
}
