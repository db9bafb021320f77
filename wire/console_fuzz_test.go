package wire

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/cbor"
	"github.com/riot-go/riot/workunit"
)

// FuzzConsole checks the console's path through the tracker: bytes that
// pass workunit.ReadConsole encode in a Done and a Finished, and decode
// back as the same bytes; bytes that do not are refused by the encoder.
func FuzzConsole(f *testing.F) {
	f.Add([]byte(testConsole()))
	f.Add([]byte(workunit.EncodeConsole([]workunit.ConsoleLine{{Level: "error", Text: "ü ∑"}, {Level: "debug"}})))
	f.Add([]byte{0x81, 0x82, 0x60, 0x61, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := cbor.NewReader(data)
		want, rerr := workunit.ReadConsole(r)
		valid := len(data) == 0 || rerr == nil && r.Remaining() == 0
		for _, m := range []Msg{
			&Done{Key: testKey("a"), Token: 1, Console: data},
			&Finished{Req: 1, Outcome: workunit.Outcome{Key: testKey("a"), Status: workunit.StatusDone, Console: data}},
		} {
			frame, err := Encode(m)
			if !valid {
				require.ErrorIs(t, err, ErrMalformed, "%x", data)
				continue
			}
			require.NoError(t, err)
			msgs, err := Decode(frame)
			require.NoError(t, err)
			var got workunit.Console
			switch m := msgs[0].(type) {
			case *Done:
				got = m.Console
			case *Finished:
				got = m.Console
			}
			if len(want) == 0 { // no lines, whatever the form of the empty array
				require.Nil(t, got)
				continue
			}
			require.True(t, bytes.Equal(data, got), "%x then %x", data, got)
		}
	})
}
