package engine

import "github.com/dop251/goja"

// bindRiot installs riot.worker, the name of the worker and the slot that
// run the workunit. Workunits see no other part of the master's riot
// object: they cannot submit work, read files or reach the network.
func bindRiot(rl *realm) error {
	worker := rl.rt.NewObject()
	if err := worker.Set("name", rl.eng.opts.WorkerName); err != nil {
		return err
	}
	if err := worker.Set("slot", rl.slotID); err != nil {
		return err
	}
	// gpus depends on the request, and riot.worker is made once per realm:
	// a getter reads it per workunit (bind_gpu.go).
	if err := worker.DefineAccessorProperty("gpus", rl.rt.ToValue(workerGPUs(rl)), nil, goja.FLAG_FALSE, goja.FLAG_TRUE); err != nil {
		return err
	}
	riot := rl.rt.NewObject()
	if err := riot.Set("worker", worker); err != nil {
		return err
	}
	for _, o := range []*goja.Object{worker, riot} {
		if _, err := rl.in.objectFreeze(goja.Undefined(), o); err != nil {
			return err
		}
	}
	return rl.rt.Set("riot", riot)
}

// bindStringLimits makes String.prototype.repeat, padStart and padEnd throw
// "RangeError: Invalid string length" past MaxStringLength, as V8 does,
// instead of building a string of gigabytes in one uninterruptible call.
func bindStringLimits(rl *realm) error {
	_, err := rl.rt.RunScript(internalFile, `(function (max) {
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
	})(`+itoa(MaxStringLength)+`);
	delete globalThis.GoError;`)
	return err
}
