package engine

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/riot-go/riot/workunit"
)

// consoleText runs src in a workunit and returns its console output, one
// line per console line, each with its level when it is not log.
func consoleText(t *testing.T, e *Engine, src string) string {
	t.Helper()
	res, err := e.Eval(context.Background(), src+"\n;0")
	require.NoError(t, err)
	var b strings.Builder
	for _, l := range lines(t, res.Console) {
		if l.Level != workunit.LevelLog && l.Level != workunit.LevelInfo {
			b.WriteString("[" + string(l.Level) + "] ")
		}
		b.WriteString(l.Text)
		b.WriteByte('\n')
	}
	return b.String()
}

// console.table, group, groupCollapsed, groupEnd, count and countReset
// print what Node 20 prints for the same calls (node con.js, the output
// kept here; Node prints warn and error to stderr, riot at their levels).
func TestConsole_AsNode(t *testing.T) {
	t.Parallel()
	e := newEngine(t, Options{Slots: 1})
	src := `console.table([{a:{x:1,y:2,z:3}, b:{x:1}, c:[1,[2,[3]],4,5], d:'s', e:null}]);
console.table([1,'a',{x:1}]);
console.table({r1:{c:1}, r2:{d:2}});
console.table(new Map([['k',{v:1}],[{o:1},2]]));
console.table(new Set([1,'x']));
console.table([[1,2],[3]]);
console.table([{a:1,b:2}], ['b','z']);
console.table([{b:1, 2: 'two', a: 3, 1: 'one'}]);
console.table(5); console.table('str'); console.table([]);
console.table([{é:'ü😀'}]);
console.group('G1'); console.log('in\nmulti'); console.group(); console.table([1]); console.groupEnd(); console.info('back'); console.groupEnd(); console.log('out');
console.groupCollapsed('C', 1); console.warn('w'); console.groupEnd(); console.groupEnd(); console.log('after extra groupEnd');
console.count(); console.count(); console.count('x'); console.countReset(); console.count(); console.count(1);
`
	want := `┌─────────┬──────────┬──────────┬────────────────────────────────────┬─────┬──────┐
│ (index) │ a        │ b        │ c                                  │ d   │ e    │
├─────────┼──────────┼──────────┼────────────────────────────────────┼─────┼──────┤
│ 0       │ [Object] │ { x: 1 } │ [ 1, [Array], 4, ... 1 more item ] │ 's' │ null │
└─────────┴──────────┴──────────┴────────────────────────────────────┴─────┴──────┘
┌─────────┬───┬────────┐
│ (index) │ x │ Values │
├─────────┼───┼────────┤
│ 0       │   │ 1      │
│ 1       │   │ 'a'    │
│ 2       │ 1 │        │
└─────────┴───┴────────┘
┌─────────┬───┬───┐
│ (index) │ c │ d │
├─────────┼───┼───┤
│ r1      │ 1 │   │
│ r2      │   │ 2 │
└─────────┴───┴───┘
┌───────────────────┬──────────┬──────────┐
│ (iteration index) │ Key      │ Values   │
├───────────────────┼──────────┼──────────┤
│ 0                 │ 'k'      │ { v: 1 } │
│ 1                 │ { o: 1 } │ 2        │
└───────────────────┴──────────┴──────────┘
┌───────────────────┬────────┐
│ (iteration index) │ Values │
├───────────────────┼────────┤
│ 0                 │ 1      │
│ 1                 │ 'x'    │
└───────────────────┴────────┘
┌─────────┬───┬───┐
│ (index) │ 0 │ 1 │
├─────────┼───┼───┤
│ 0       │ 1 │ 2 │
│ 1       │ 3 │   │
└─────────┴───┴───┘
┌─────────┬───┬───┐
│ (index) │ b │ z │
├─────────┼───┼───┤
│ 0       │ 2 │   │
└─────────┴───┴───┘
┌─────────┬───────┬───────┬───┬───┐
│ (index) │ 1     │ 2     │ b │ a │
├─────────┼───────┼───────┼───┼───┤
│ 0       │ 'one' │ 'two' │ 1 │ 3 │
└─────────┴───────┴───────┴───┴───┘
5
str
┌─────────┐
│ (index) │
├─────────┤
└─────────┘
┌─────────┬───────┐
│ (index) │ é     │
├─────────┼───────┤
│ 0       │ 'ü😀' │
└─────────┴───────┘
G1
  in
  multi
    ┌─────────┬────────┐
    │ (index) │ Values │
    ├─────────┼────────┤
    │ 0       │ 1      │
    └─────────┴────────┘
  back
out
C 1
  w
after extra groupEnd
default: 1
default: 2
x: 1
default: 1
1: 1
`
	assert.Equal(t, want, strings.ReplaceAll(consoleText(t, e, src), "[warn] ", ""))
}

// console.time, timeLog and timeEnd print the elapsed time as Node does,
// and warn, as Node does, of a label that exists or does not.
func TestConsole_Time(t *testing.T) {
	t.Parallel()
	e := newEngine(t, Options{Slots: 1})
	got := consoleText(t, e, `console.time(); console.time('t'); console.time('t');
		console.timeLog('t', 'extra', {a: 1}, '%d'); console.timeEnd('t'); console.timeEnd('t'); console.timeLog('nope');
		console.timeEnd()`)
	assert.Regexp(t, regexp.MustCompile(`^\[warn\] Warning: Label 't' already exists for console.time\(\)
t: \d+(\.\d{1,3})?ms extra \{ a: 1 \} %d
t: \d+(\.\d{1,3})?ms
\[warn\] Warning: No such label 't' for console.timeEnd\(\)
\[warn\] Warning: No such label 'nope' for console.timeLog\(\)
default: \d+(\.\d{1,3})?ms
$`), got)
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0ms"},
		{1234567 * time.Nanosecond, "1.235ms"},
		{999 * time.Millisecond, "999ms"},
		{1500 * time.Millisecond, "1.500s"},
		{62345 * time.Millisecond, "1:02.345 (m:ss.mmm)"},
		{time.Hour + 2*time.Minute + 3456*time.Millisecond, "1:02:03.456 (h:mm:ss.mmm)"},
	} {
		assert.Equal(t, tc.want, formatDuration(tc.d), tc.d.String())
	}
}

// Counters, timers and the group's indentation belong to one workunit:
// the next workunit of the runtime starts with none.
func TestConsole_StatePerWorkunit(t *testing.T) {
	t.Parallel()
	e := newEngine(t, Options{Slots: 1})
	assert.Equal(t, "a: 1\na: 2\n  in group\n", consoleText(t, e, `console.count('a'); console.count('a'); console.time('x'); console.group(); console.log('in group')`))
	assert.Equal(t, "a: 1\n[warn] Warning: No such label 'x' for console.timeEnd()\nnot indented\n",
		consoleText(t, e, `console.count('a'); console.timeEnd('x'); console.log('not indented')`))
}

// console lists its methods in one order, Node's own first.
func TestConsole_Keys(t *testing.T) {
	t.Parallel()
	e := newEngine(t, Options{Slots: 1})
	assert.Equal(t, "log,info,warn,error,debug,trace,assert,dir,table,time,timeEnd,timeLog,count,countReset,group,groupCollapsed,groupEnd",
		evalValue(t, e, "Object.keys(console).join()"))
}

// console.table of a huge array, or of rows with many columns, is cut
// short with a note of the rows it left out, in bounded time and memory;
// count and time keep a bounded number of labels.
func TestConsole_Bounded(t *testing.T) {
	// Not parallel: the memory limit is judged by the heap of the whole
	// test process, which parallel tests would share.
	e := newEngine(t, Options{Slots: 1, MemoryLimit: 256 << 20, MaxConsoleBytes: 8 << 20})
	out := consoleText(t, e, `console.table(new Array(2 ** 18).fill(7))`)
	assert.Less(t, len(out), 2*maxTableBytes)
	assert.Regexp(t, `\n\.\.\. \d+ more rows \(console.table shows at most 65536 cells or 1024 KiB\)\n$`, out)
	out = consoleText(t, e, `console.table([Object.fromEntries(Array.from({length: 100000}, (_, i) => ['k' + i, i]))])`)
	assert.Less(t, len(out), 8*maxTableBytes)
	// One object of many keys in every cell: its keys are counted once.
	out = consoleText(t, e, `const big = Object.fromEntries(Array.from({length: 50000}, (_, i) => ['k' + i, i]));
		console.table([new Array(60000).fill(big)])`)
	assert.Contains(t, out, "│ 0       │ [Object] │ [Object] │")
	out = consoleText(t, e, `const a = []; a[2 ** 32 - 2] = 1; console.table(a)`)
	assert.Contains(t, out, "│ 4294967294 │ 1      │")
	out = consoleText(t, e, `for (let i = 0; i < 10001; i++) console.count('k' + i)`)
	assert.True(t, strings.HasSuffix(out, "[warn] Warning: console.count('k10000'): 10000 labels are counted, the most a workunit may have; reset some with console.countReset()\n"), out[len(out)-200:])
}

// URL, URLSearchParams, TextEncoder and TextDecoder print as Node prints
// them: their state, which is private, through their getters.
func TestConsole_WebObjects(t *testing.T) {
	t.Parallel()
	e := newEngine(t, Options{Slots: 1})
	src := `console.log(new URL('https://u:p@a.com:81/p?q=1#h'));
console.log(new URLSearchParams('a=1&b=x y'));
console.log(new TextEncoder(), new TextDecoder());
console.log([new URL('http://a')]);
console.log(new URLSearchParams());
`
	want := `URL {
  href: 'https://u:p@a.com:81/p?q=1#h',
  origin: 'https://a.com:81',
  protocol: 'https:',
  username: 'u',
  password: 'p',
  host: 'a.com:81',
  hostname: 'a.com',
  port: '81',
  pathname: '/p',
  search: '?q=1',
  searchParams: URLSearchParams { 'q' => '1' },
  hash: '#h'
}
URLSearchParams { 'a' => '1', 'b' => 'x y' }
{ encoding: 'utf-8' } TextDecoder { encoding: 'utf-8', fatal: false, ignoreBOM: false }
[
  URL {
    href: 'http://a/',
    origin: 'http://a',
    protocol: 'http:',
    username: '',
    password: '',
    host: 'a',
    hostname: 'a',
    port: '',
    pathname: '/',
    search: '',
    searchParams: URLSearchParams {},
    hash: ''
  }
]
URLSearchParams {}
`
	assert.Equal(t, want, consoleText(t, e, src))
}
