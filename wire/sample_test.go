package wire

import (
	"crypto/sha256"
	"time"

	"github.com/riot-go/riot/blob"
	"github.com/riot-go/riot/workunit"
)

// sample is one message with every field set, as the round-trip, golden
// and fuzz-seed tests use it.
type sample struct {
	name   string // golden file name, without .golden
	layout string // the message's CBOR layout, for the golden file's header
	msg    Msg
}

func testKey(s string) workunit.Key { return workunit.Key(sha256.Sum256([]byte("key " + s))) }

func testHash(s string) blob.Hash { return blob.Sum([]byte("blob " + s)) }

var testTime = time.UnixMilli(1767225600123).UTC() // 2026-01-01T00:00:00.123Z

func testWorkError() *workunit.Error {
	return &workunit.Error{
		Kind:    workunit.Thrown,
		Name:    "TypeError",
		Message: "x.foo is not a function",
		Stack:   "TypeError: x.foo is not a function\n    at work (job.js:3:5)",
		Value:   []byte{0xa1, 0x64, 'c', 'o', 'd', 'e', 0x07},
		Worker:  "alfred-2",
		Key:     testKey("failed"),
		Attempts: []workunit.Attempt{
			{Worker: "alfred-1", Name: "TypeError", Message: "x.foo is not a function"},
			{Worker: "alfred-2", Name: "TypeError", Message: "x.foo is not a function"},
		},
	}
}

func testLines() []Line {
	return []Line{
		{Level: workunit.LevelLog, Text: "epoch 1 of 3", Time: time.UnixMilli(1767225600123).UTC()},
		{Level: workunit.LevelWarn, Text: "careful ✓", Time: time.UnixMilli(1767225600250).UTC()},
	}
}

func testConsole() workunit.Console {
	return workunit.EncodeConsole([]workunit.ConsoleLine{{Level: "log", Text: "hello from a workunit"}, {Level: "warn", Text: "careful ✓"}})
}

func testOutcome(key workunit.Key, status workunit.Status) workunit.Outcome {
	o := workunit.Outcome{
		Key:        key,
		Status:     status,
		Worker:     "alfred-2",
		Console:    testConsole(),
		LastChange: testTime,
		Elapsed:    1500 * time.Microsecond,
	}
	if status == workunit.StatusError {
		o.Err = testWorkError()
	} else {
		o.Result = []byte{0x83, 0x01, 0x02, 0x03} // [1, 2, 3]
	}
	return o
}

// samples returns one message of each type, every field set (a few types
// twice, for their variants). Each call returns new messages.
func samples() []sample {
	return []sample{
		{"hello", "[1, version, role, name, session, slots, prefetch, [[gpu-name, memory]...], token, agent, job, memory-limit]", &Hello{
			Version: ProtocolVersion, Role: RoleWorker, Name: "alfred", Session: "5f1c0a9e3b7d4c21a0e9f8d7c6b5a493",
			Slots: 8, Prefetch: 2, GPUs: []GPU{{Name: "NVIDIA H200", Memory: 150 << 30}, {Name: "NVIDIA H200", Memory: 150 << 30}},
			Token: "s3cret", Agent: "riot-worker/0.1.0 go1.26", MemoryLimit: 4 << 30,
		}},
		{"hello-master", "[1, version, role, name, session, slots, prefetch, gpus, token, agent, job, memory-limit]", &Hello{
			Version: ProtocolVersion, Role: RoleMaster, Name: "laptop", Session: "0123456789abcdef0123456789abcdef",
			Agent: "riot-worker eval/0.1.0", Job: "words.js",
		}},
		{"welcome", "[2, version, name, tracker, ping-interval-ms, resumed, [max-frame-bytes, max-messages, max-spec-bytes, max-result-bytes, max-blob-bytes]]", &Welcome{
			Version: ProtocolVersion, Name: "alfred-2", Tracker: "riotd tracker-1:2355", PingInterval: 5 * time.Second,
			Resumed: true, Limits: Limits{}.WithDefaults(),
		}},
		{"refused", "[3, code, message, version]", VersionMismatch(7)},
		{"error", "[4, req, code, message]", &Error{Req: 42, Code: CodeStore, Message: "store: disk full"}},
		{"submit", "[5, req, spec, no-cache, gpus, timeout-ms, watch, retries, [retry-on...]]", &Submit{
			Req: 7, Spec: []byte{0x87, 0x01, 0x65, '1', '+', '2', '+', '3'},
			Options: workunit.Options{NoCache: true, GPUs: 1, Timeout: 30 * time.Second, Retries: 2, RetryOn: []string{"TypeError", "NetworkError"}}, Watch: true,
		}},
		{"accepted", "[6, req, key, status, worker, result, error, console, last-change-ms, elapsed-us]", &Accepted{
			Req: 7, Outcome: testOutcome(testKey("accepted"), workunit.StatusDone),
		}},
		{"watch", "[7, req, [key...]]", &Watch{Req: 8, Keys: []workunit.Key{testKey("a"), testKey("b")}}},
		{"unwatch", "[8, [key...]]", &Unwatch{Keys: []workunit.Key{testKey("a")}}},
		{"finished", "[9, req, key, status, worker, result, error, console, last-change-ms, elapsed-us]", &Finished{
			Req: 8, Outcome: testOutcome(testKey("a"), workunit.StatusDone),
		}},
		{"finished-error", "[9, req, key, status, worker, result, error, console, last-change-ms, elapsed-us]", &Finished{
			Req: 8, Outcome: testOutcome(testKey("failed"), workunit.StatusError),
		}},
		{"info", "[10, req, key]", &Info{Req: 9, Key: testKey("a")}},
		{"info-reply", "[11, req, key, status, worker, result, error, console, last-change-ms, elapsed-us]", &InfoReply{
			Req: 9, Outcome: workunit.Outcome{Key: testKey("a"), Status: workunit.StatusRunning, Worker: "alfred-2", LastChange: testTime},
		}},
		{"blob-have", "[12, req, [hash...]]", &BlobHave{Req: 10, Hashes: []blob.Hash{testHash("module"), testHash("dictionary")}}},
		{"blob-need", "[13, req, [hash...]]", &BlobNeed{Req: 10, Missing: []blob.Hash{testHash("dictionary")}}},
		{"blob-put", "[14, req, hash, data]", &BlobPut{Req: 11, Hash: blob.Sum([]byte("dictionary")), Data: []byte("dictionary")}},
		{"blob-stored", "[15, req, hash]", &BlobStored{Req: 11, Hash: blob.Sum([]byte("dictionary"))}},
		{"credit", "[16, n]", &Credit{N: 10}},
		{"assign", "[17, key, token, spec, realm, timeout-ms, gpus]", &Assign{
			Key: testKey("a"), Token: 1767225600000000001, Spec: []byte{0x87, 0x01, 0x65, '1', '+', '2', '+', '3'},
			Realm: "laptop-1", Timeout: 30 * time.Second, GPUs: 1,
		}},
		{"done", "[18, key, token, result, console, elapsed-us]", &Done{
			Key: testKey("a"), Token: 1767225600000000001, Result: []byte{0x06}, Console: testConsole(), Elapsed: 250 * time.Microsecond,
		}},
		{"failed", "[19, key, token, error, console, elapsed-us]", &Failed{
			Key: testKey("failed"), Token: 1767225600000000002, Error: testWorkError(), Console: testConsole(), Elapsed: 3 * time.Millisecond,
		}},
		{"return", "[20, [[key, token]...]]", &Return{Leases: []Lease{{Key: testKey("a"), Token: 3}, {Key: testKey("b"), Token: 4}}}},
		{"blob-get", "[21, req, hash]", &BlobGet{Req: 12, Hash: testHash("module")}},
		{"blob-data", "[22, req, hash, data]", &BlobData{Req: 12, Hash: blob.Sum([]byte("dictionary")), Data: []byte("dictionary")}},
		{"blob-data-missing", "[22, req, hash, null]", &BlobData{Req: 13, Hash: testHash("gone"), Missing: true}},
		{"cancel", "[23, req, [key...]]", &Cancel{Req: 14, Keys: []workunit.Key{testKey("a"), testKey("b")}}},
		{"canceled", "[24, req, [key...]]", &Canceled{Req: 14, Keys: []workunit.Key{testKey("a")}}},
		{"revoke", "[25, key, token]", &Revoke{Key: testKey("a"), Token: 1767225600000000001}},
		{"blob-write", "[26, req, hash, size, offset, data]", &BlobWrite{Req: 15, Hash: blob.Sum([]byte("dictionary")), Size: 10, Offset: 4, Data: []byte("iona")}},
		{"blob-written", "[27, req, hash, written]", &BlobWritten{Req: 15, Hash: blob.Sum([]byte("dictionary")), Written: 8}},
		{"blob-read", "[28, req, hash, offset, length]", &BlobRead{Req: 16, Hash: blob.Sum([]byte("dictionary")), Offset: 4, Length: 4}},
		{"blob-part", "[29, req, hash, size, offset, data]", &BlobPart{Req: 16, Hash: blob.Sum([]byte("dictionary")), Size: 10, Offset: 4, Data: []byte("iona")}},
		{"blob-part-missing", "[29, req, hash, size, offset, null]", &BlobPart{Req: 17, Hash: testHash("gone"), Missing: true}},
		{"stats", "[30, heap, running]", &Stats{Heap: 812 << 20, Running: 2}},
		{"child", "[33, req, parent, token, spec, no-cache, gpus, timeout, watch, retries, [retry-on...]]", &Child{Req: 18, Parent: testKey("a"), Token: 1767225600000000001, Spec: []byte{0x87, 0x01, 0x63, '1', '+', '2'}, Options: workunit.Options{GPUs: 1, Timeout: 2 * time.Second, Retries: 2, RetryOn: []string{"TypeError"}}, Watch: true}},
		{"wait", "[34, key, token, waiting]", &Wait{Key: testKey("a"), Token: 1767225600000000001, Waiting: true}},
		{"print", "[31, key, token, [[level, text, time-ms]...]]", &Print{Key: testKey("a"), Token: 1767225600000000001, Lines: testLines()}},
		{"printed", "[32, key, worker, [[level, text, time-ms]...], missed]", &Printed{Key: testKey("a"), Worker: "alfred", Lines: testLines(), Missed: 3}},
	}
}

func sampleMsgs() []Msg {
	var msgs []Msg
	for _, s := range samples() {
		msgs = append(msgs, s.msg)
	}
	return msgs
}
