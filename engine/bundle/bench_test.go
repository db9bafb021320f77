package bundle

import (
	"os"
	"testing"
)

// BenchmarkBuild_TypedDemo bundles scripts/typed-demo.ts and its module:
// what riot-worker eval adds before a TypeScript job starts.
func BenchmarkBuild_TypedDemo(b *testing.B) {
	src, err := os.ReadFile("../../scripts/typed-demo.ts")
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := Build("../../scripts/typed-demo.ts", string(src)); err != nil {
			b.Fatal(err)
		}
	}
}
