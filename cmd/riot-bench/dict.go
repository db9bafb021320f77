package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// dictResult is what one run of a dictionary job moved over the wire.
type dictResult struct {
	label     string // the column's heading
	words     int    // words in the dictionary the script built
	dictBytes int64  // their size as text, one line each
	fileBytes int64  // the size of the whole word list
	workunits int    // workunits the tracker finished
	found     int    // "There are N words."
	elapsed   time.Duration
	// Raw TCP bytes through the proxies: master to riotd and back,
	// workers to riotd and back.
	masterUp, masterDown int64
	workerUp, workerDown int64
	// riotd's own count (riot_bytes_total), websocket payloads.
	metricsIn, metricsOut float64
}

var thereAre = regexp.MustCompile(`There are (\d+) words\.`)

// fullDictJS is riot-bench's variant of scripts/dict.js for a dictionary
// of the whole word list: the same search (the seed's brute force), but
// only the first N first words (riot.args[1]) are workunits, so that it
// ends in seconds. Every workunit captures the whole dictionary.
const fullDictJS = `// riot-bench: scripts/dict.js with the whole word list as the dictionary
// and only the first N lower-case words as first words (workunits).
const [wordsPath, first] = riot.args;
const words = riot.readLines(wordsPath).filter((word) => word.length >= 3);
const dictionary = new Set(words);

function combinationsOf(firstWord) {
  const found = [];
  for (const secondWord of dictionary) {
    if (dictionary.has(firstWord + secondWord)) {
      found.push([firstWord, secondWord]);
    }
  }
  return found;
}

const firsts = words.filter((word) => word[0] !== word[0].toUpperCase()).slice(0, Number(first));
const combinations = riot.forWork(firsts, combinationsOf).flat();
console.log(` + "`There are ${combinations.length} words.`" + `);
`

// runDict runs scripts/dict.js --limit limit over --words.
func (b *bench) runDict(ctx context.Context, limit int) (dictResult, error) {
	res := dictResult{label: fmt.Sprintf("dict.js --limit %d", limit)}
	var err error
	if res.words, res.dictBytes, res.fileBytes, err = dictionarySize(b.cfg.words, limit); err != nil {
		return res, err
	}
	script, err := b.scriptPath("dict.js")
	if err != nil {
		return res, err
	}
	words, err := filepath.Abs(b.cfg.words)
	if err != nil {
		return res, err
	}
	return b.runDictJob(ctx, res, script, "--limit", strconv.Itoa(limit), "--words", words)
}

// runFullDict runs fullDictJS with first workunits over --words.
func (b *bench) runFullDict(ctx context.Context, first int) (dictResult, error) {
	res := dictResult{label: fmt.Sprintf("whole list, %d workunits", first)}
	var err error
	if res.words, res.dictBytes, res.fileBytes, err = dictionarySize(b.cfg.words, -1); err != nil {
		return res, err
	}
	script := filepath.Join(b.tmp, "dict-whole-list.js")
	if err := os.WriteFile(script, []byte(fullDictJS), 0o644); err != nil {
		return res, err
	}
	words, err := filepath.Abs(b.cfg.words)
	if err != nil {
		return res, err
	}
	return b.runDictJob(ctx, res, script, words, strconv.Itoa(first))
}

// runDictJob runs `riot-worker eval SCRIPT ARGS...` as the master against a
// fresh riotd in memory with cfg.workers workers, the master and the
// workers each connected through a counting proxy.
func (b *bench) runDictJob(ctx context.Context, res dictResult, script string, args ...string) (dictResult, error) {
	tr, err := b.startTracker(ctx, "memory")
	if err != nil {
		return res, err
	}
	defer tr.Close()
	wp, err := startProxy(tr.Addr())
	if err != nil {
		return res, err
	}
	defer wp.Close()
	mp, err := startProxy(tr.Addr())
	if err != nil {
		return res, err
	}
	defer mp.Close()
	cl := &cluster{tr: tr}
	defer cl.closeWorkers()
	if err := b.addWorkers(ctx, cl, wp.Addr(), b.cfg.workers); err != nil {
		return res, err
	}
	before, err := tr.Metrics(ctx)
	if err != nil {
		return res, err
	}
	wUp0, wDown0 := wp.Bytes()

	fmt.Fprintf(b.log, "riot-bench: %s (%d words in the dictionary, %d workers)\n", res.label, res.words, b.cfg.workers)
	start := time.Now()
	out, err := b.bins.Eval(ctx, nil, append([]string{"--tracker", mp.Addr(), script}, args...)...)
	res.elapsed = time.Since(start)
	if err != nil {
		return res, err
	}
	if out.Code != 0 {
		return res, fmt.Errorf("riot-worker eval %s failed:\n%s", filepath.Base(script), out)
	}
	m := thereAre.FindStringSubmatch(out.Stdout)
	if m == nil {
		return res, fmt.Errorf("%s printed no count:\n%s", filepath.Base(script), out)
	}
	res.found, _ = strconv.Atoi(m[1])

	st, err := tr.Status(ctx)
	if err != nil {
		return res, err
	}
	res.workunits = st.Workunits.Done
	after, err := tr.Metrics(ctx)
	if err != nil {
		return res, err
	}
	res.metricsIn = after[`riot_bytes_total{direction="in"}`] - before[`riot_bytes_total{direction="in"}`]
	res.metricsOut = after[`riot_bytes_total{direction="out"}`] - before[`riot_bytes_total{direction="out"}`]
	res.masterUp, res.masterDown = mp.Bytes()
	wUp, wDown := wp.Bytes()
	res.workerUp, res.workerDown = wUp-wUp0, wDown-wDown0
	return res, nil
}

// scriptPath finds one of riot's scripts: in --scripts, or in the module's
// scripts/ directory.
func (b *bench) scriptPath(name string) (string, error) {
	dir := b.cfg.scripts
	if dir == "" {
		if b.bins.Root == "" {
			return "", fmt.Errorf("cannot find riot's scripts/: run inside riot's module or give --scripts")
		}
		dir = filepath.Join(b.bins.Root, "scripts")
	}
	p, err := filepath.Abs(filepath.Join(dir, name))
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(p); err != nil {
		return "", err
	}
	return p, nil
}

// dictionarySize reads the word list as scripts/dict.js does with
// --limit: the words of at least three characters (UTF-16 code units, as
// JavaScript counts) whose first character is not upper case, the first
// limit of them; a negative limit keeps every word of at least three
// characters, as dict.js does without --limit. It returns how many there
// are, their size as text (one per line), and the size of the whole list.
func dictionarySize(path string, limit int) (words int, textBytes, fileBytes int64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		fileBytes += int64(len(line)) + 1
		w := strings.TrimSuffix(line, "\r")
		if jsLength(w) < 3 {
			continue
		}
		if limit < 0 {
			words++
			textBytes += int64(len(w)) + 1
			continue
		}
		r, _ := utf8.DecodeRuneInString(w)
		if unicode.ToUpper(r) == r {
			continue
		}
		if words < limit {
			words++
			textBytes += int64(len(w)) + 1
		}
	}
	return words, textBytes, fileBytes, sc.Err()
}

// jsLength is a string's length in UTF-16 code units.
func jsLength(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}
