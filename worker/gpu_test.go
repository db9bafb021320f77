package worker

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestGPUPool_TakeRelease(t *testing.T) {
	t.Parallel()
	p := newGPUPool(3)
	none, rel0 := p.take(0)
	assert.Nil(t, none, "no GPUs asked: every device, as engine.Request says")
	a, relA := p.take(2)
	assert.Equal(t, []int{0, 1}, a)
	b, relB := p.take(1)
	assert.Equal(t, []int{2}, b)
	relA()
	c, relC := p.take(2)
	assert.ElementsMatch(t, []int{0, 1}, c)
	rel0()
	relB()
	relC()
	d, _ := p.take(3)
	assert.ElementsMatch(t, []int{0, 1, 2}, d)
}
