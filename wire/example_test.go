package wire_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/riot-go/riot/wire"
	"github.com/riot-go/riot/workunit"
)

// A worker's writer batches every message that is ready into one frame;
// its reader decodes each frame and handles its messages in order.
func Example() {
	// The worker: results of two workunits and credit for two more.
	enc := wire.Encoder{Limits: wire.Limits{}} // a client uses Welcome.Limits
	ready := []wire.Msg{
		&wire.Done{Key: workunit.Key{1}, Token: 11, Result: []byte{0x06}, Elapsed: 250 * time.Microsecond},
		&wire.Failed{Key: workunit.Key{2}, Token: 12, Error: &workunit.Error{
			Kind: workunit.Thrown, Name: "TypeError", Message: "x is not a function"}},
		&wire.Credit{N: 2},
	}
	var frames [][]byte
	for _, m := range ready {
		err := enc.Add(m)
		if errors.Is(err, wire.ErrFrameFull) {
			frames = append(frames, append([]byte(nil), enc.Frame()...))
			enc.Reset()
			err = enc.Add(m)
		}
		if err != nil {
			fmt.Println("cannot send:", err)
		}
	}
	frames = append(frames, append([]byte(nil), enc.Frame()...))
	enc.Reset()

	// The tracker: one Decoder per connection.
	var dec wire.Decoder
	for _, frame := range frames {
		msgs, err := dec.Decode(frame)
		if err != nil {
			fmt.Println("close with", wire.CloseProtocolError, "after", wire.CodeOf(err), err)
			return
		}
		for _, m := range msgs {
			switch m := m.(type) {
			case *wire.Done:
				fmt.Printf("done %x token %d: %d result bytes in %v\n", m.Key[:1], m.Token, len(m.Result), m.Elapsed)
			case *wire.Failed:
				fmt.Printf("failed %x token %d: %v\n", m.Key[:1], m.Token, m.Error)
			case *wire.Credit:
				fmt.Printf("credit %d\n", m.N)
			}
		}
	}
	// Output:
	// done 01 token 11: 1 result bytes in 250µs
	// failed 02 token 12: TypeError: x is not a function
	// credit 2
}

// A tracker answers a Hello of another version with Refused, which names
// both versions, then closes with CloseRefused+Code.
func ExampleVersionMismatch() {
	frame, _ := wire.Encode(&wire.Hello{Version: 8, Role: wire.RoleWorker, Name: "alfred"})
	msgs, _ := wire.Decode(frame)
	hello := msgs[0].(*wire.Hello)
	if hello.Version != wire.ProtocolVersion {
		r := wire.VersionMismatch(hello.Version)
		fmt.Println(r.Message)
		fmt.Println("close code", wire.CloseRefused+int(r.Code))
	}
	// Output:
	// protocol version 8 is not this tracker's version 7
	// close code 4001
}
