package main

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// reservedWords are the words riot-worker keeps for commands it may have
// one day: in HOST's place, one that does not resolve is an unknown
// command, not a tracker to wait for. (status, jobs, workunits, cancel
// and logs, and types, kept so before, are commands now.)
const reservedWords = "list"

// resolveTimeout bounds the look-up of a word that may be a command.
const resolveTimeout = 3 * time.Second

// looksLikeCommand reports whether word, in HOST's place, is a command
// rather than the tracker's host: a plain word (no dot, colon, slash or
// bracket; not localhost) that is a reserved word or within two edits of
// one of commands ("evl", "hlep"), and that does not resolve as a host
// name (lookupHost). Any other word is a host, even one that does not
// resolve yet: a worker started before the network's names are up (a
// service at boot) waits for them, as for a tracker that is down.
func looksLikeCommand(ctx context.Context, word string, commands []string,
	lookupHost func(context.Context, string) ([]string, error)) bool {
	w := strings.ToLower(word)
	if w == "" || strings.HasPrefix(w, "-") || strings.ContainsAny(w, ".:/[]") || w == "localhost" {
		return false
	}
	near := false
	for _, r := range strings.Split(reservedWords, ", ") {
		near = near || w == r
	}
	for _, c := range commands {
		near = near || editDistance(w, c) <= 2
	}
	if !near {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, resolveTimeout)
	defer cancel()
	_, err := lookupHost(ctx, word)
	return err != nil
}

// commandNames returns the names of root's commands, help and completion
// included.
func commandNames(root *cobra.Command) []string {
	var names []string
	for _, c := range root.Commands() {
		if c.IsAvailableCommand() || c.Name() == "help" {
			names = append(names, c.Name())
		}
	}
	return names
}

// joinWords joins words as in "a, b and c".
func joinWords(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}

// editDistance is the Levenshtein distance between a and b (bytes).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
