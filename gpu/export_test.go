package gpu

// WithChunkHook makes staged copies call hook after each chunk, for tests
// that act between two chunks.
func WithChunkHook(hook func()) Option {
	return func(c *config) { c.chunkHook = hook }
}
