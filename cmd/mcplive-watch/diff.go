package main

import "strings"

// maxDiffCells bounds the work of a diff: two results whose line counts
// multiply to more are shown whole instead.
const maxDiffCells = 4 << 20

// diffLines returns the lines that differ between old and new, in order:
// "- " before a line only old has, "+ " before one only new has. Lines
// both have are left out, so a changed field of an indented JSON result
// reads as its old line and its new one.
func diffLines(old, new string) []string {
	a, b := strings.Split(old, "\n"), strings.Split(new, "\n")
	if len(a)*len(b) > maxDiffCells {
		out := []string{"(too long to compare line by line; the new result:)"}
		for _, line := range b {
			out = append(out, "+ "+line)
		}
		return out
	}
	// lcs[i][j] is the length of the longest common subsequence of a[i:]
	// and b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out []string
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			i, j = i+1, j+1
		case j < len(b) && (i == len(a) || lcs[i][j+1] > lcs[i+1][j]):
			out = append(out, "+ "+b[j])
			j++
		default:
			out = append(out, "- "+a[i])
			i++
		}
	}
	return out
}
