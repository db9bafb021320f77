package engine

import (
	"github.com/dop251/goja"
	"github.com/riot-go/riot/engine/internal/jsvalue"
)

// bindRiot installs riot.worker, the name of the worker and the slot that
// run the workunit. A worker's bindings (engine/jschild) add the
// functions that submit children to riot; the engine freezes riot after
// the bindings (newRealm). Workunits cannot read files or reach the
// network.
func bindRiot(rl *realm) error {
	worker := rl.rt.NewObject()
	// name may change between workunits (Request.WorkerName: a worker the
	// tracker renamed on a reconnect), and riot.worker is made once per
	// realm: a getter reads it per workunit, as gpus.
	if err := worker.DefineAccessorProperty("name", rl.rt.ToValue(workerName(rl)), nil, goja.FLAG_FALSE, goja.FLAG_TRUE); err != nil {
		return err
	}
	// slot is the running workunit's: a runtime runs on any slot
	// (runtimePool).
	if err := worker.DefineAccessorProperty("slot", rl.rt.ToValue(workerSlot(rl)), nil, goja.FLAG_FALSE, goja.FLAG_TRUE); err != nil {
		return err
	}
	// gpus depends on the request too.
	if err := worker.DefineAccessorProperty("gpus", rl.rt.ToValue(workerGPUs(rl)), nil, goja.FLAG_FALSE, goja.FLAG_TRUE); err != nil {
		return err
	}
	riot := rl.rt.NewObject()
	if err := riot.Set("worker", worker); err != nil {
		return err
	}
	if _, err := rl.in.ObjectFreeze(goja.Undefined(), worker); err != nil {
		return err
	}
	return rl.rt.Set("riot", riot)
}

// workerName returns the getter of riot.worker.name: the running
// workunit's Request.WorkerName, or Options.WorkerName when the request
// gave none.
func workerName(rl *realm) func(goja.FunctionCall) goja.Value {
	var (
		last string
		val  goja.Value
	)
	return func(goja.FunctionCall) goja.Value {
		name := rl.eng.opts.WorkerName
		if rl.cur != nil && rl.cur.workerName != "" {
			name = rl.cur.workerName
		}
		if val == nil || name != last {
			last, val = name, rl.rt.ToValue(name)
		}
		return val
	}
}

// workerSlot returns the getter of riot.worker.slot: the slot that runs
// the running workunit (0 outside an engine's run).
func workerSlot(rl *realm) func(goja.FunctionCall) goja.Value {
	return func(goja.FunctionCall) goja.Value {
		if rl.cur != nil && rl.cur.slot != nil {
			return rl.rt.ToValue(rl.cur.slot.id)
		}
		return rl.rt.ToValue(0)
	}
}

// workerGPUs returns the getter of riot.worker.gpus: a frozen array of the
// device ordinals that the worker gave the running workunit
// (Request.GPUs), or of every device of the host (Options.GPUs) when the
// request gave none. riot.worker is made once per realm, so the array is
// made at call time, once per workunit.
func workerGPUs(rl *realm) func(goja.FunctionCall) goja.Value {
	var (
		last *run
		arr  *goja.Object
	)
	return func(goja.FunctionCall) goja.Value {
		if rl.cur != nil && rl.cur == last {
			return arr
		}
		gpus := rl.gpus()
		items := make([]any, len(gpus))
		for i, g := range gpus {
			items[i] = g
		}
		a := rl.rt.NewArray(items...)
		if _, err := rl.in.ObjectFreeze(goja.Undefined(), a); err != nil {
			panic(err)
		}
		last, arr = rl.cur, a
		return a
	}
}

// gpus returns the devices of the running workunit: Request.GPUs, or
// every device of the host (Options.GPUs) when the request gave none.
func (rl *realm) gpus() []int {
	if rl.cur != nil && len(rl.cur.gpus) > 0 {
		return rl.cur.gpus
	}
	return rl.eng.opts.GPUs
}

// bindStringLimits makes String.prototype.repeat, padStart and padEnd throw
// "RangeError: Invalid string length" past MaxStringLength, as V8 does,
// instead of building a string of gigabytes in one uninterruptible call.
func bindStringLimits(rl *realm) error {
	_, err := stringLimitsScript.Run(rl.rt)
	return err
}

// stringLimitsScript is bindStringLimits' script, compiled once: a program
// compiled per realm was kept by the functions it made, in every idle
// realm.
var stringLimitsScript = jsvalue.NewScript(`(function (max) {
		const S = String.prototype;
		const origRepeat = S.repeat, origPadStart = S.padStart, origPadEnd = S.padEnd;
		const str = (v, name) => {
			if (v === null || v === undefined) throw new TypeError('String.prototype.' + name + ' called on null or undefined');
			return String(v);
		};
		Object.defineProperty(S, 'repeat', { writable: true, configurable: true, value: function repeat(count) {
			const s = str(this, 'repeat'); const n = Math.trunc(Number(count)) || 0;
			if (n > 0 && n !== Infinity && s.length * n > max) throw new RangeError('Invalid string length');
			return origRepeat.call(s, count);
		}});
		Object.defineProperty(S, 'padStart', { writable: true, configurable: true, value: function padStart(len, fill) {
			const s = str(this, 'padStart'); if (Number(len) > max) throw new RangeError('Invalid string length');
			return origPadStart.call(s, len, fill);
		}});
		Object.defineProperty(S, 'padEnd', { writable: true, configurable: true, value: function padEnd(len, fill) {
			const s = str(this, 'padEnd'); if (Number(len) > max) throw new RangeError('Invalid string length');
			return origPadEnd.call(s, len, fill);
		}});
	})(` + jsvalue.Index(MaxStringLength) + `);
	delete globalThis.GoError;`)
