package table_test

import (
	"fmt"
	"time"

	"github.com/riot-go/riot/tracker/table"
	"github.com/riot-go/riot/workunit"
)

// Example shows the shell's loop: step events, then for each Ready persist,
// send, notify and Advance.
func Example() {
	t := table.New(table.Config{})
	disk := map[workunit.Key]table.Record{} // stands in for the store
	var k workunit.Key
	copy(k[:], "job-1")

	handle := func() {
		for t.HasReady() {
			rd := t.Ready()
			for _, r := range rd.Persist { // 1. persist (durably, in one commit)
				disk[r.Key] = r
			}
			for _, m := range rd.Send { // 2. send
				switch m := m.(type) {
				case *table.Assign:
					fmt.Printf("to worker %d: run %q (token %d)\n", m.Worker, m.Spec, m.Token)
				case *table.Ack:
					fmt.Printf("to master %d: accepted, %s\n", m.Master, m.Status)
				}
			}
			for _, n := range rd.Notify { // 3. notify
				fmt.Printf("to master %d: %s by %s: %s\n", n.Master, n.Status, n.Worker, n.Result)
			}
			t.Advance(rd) // 4. advance
		}
	}

	_ = t.Step(table.Tick{Now: time.Now()})
	_ = t.Step(table.Submit{Master: 1, Key: k, Spec: []byte("1 + 2"), Watch: true})
	handle()
	_ = t.Step(table.WorkerJoin{Worker: 7, Name: "box-a", Slots: 1, Credit: 1})
	handle()
	_ = t.Step(table.Complete{Worker: 7, Key: k, Token: 1, Result: []byte("3")})
	handle()
	fmt.Println("on disk:", disk[k].Status)
	// Output:
	// to master 1: accepted, waiting
	// to worker 7: run "1 + 2" (token 1)
	// to master 1: done by box-a: 3
	// on disk: done
}
