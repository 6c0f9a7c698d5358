// Package docblocks reads the fenced code blocks of kubepact's documentation, README.md and
// docs/*.md, by the heading of the section that holds them, for the tests that run them as
// written. A section is looked up by its heading line across all those files, so that moving
// it from README.md into docs/ (or back) leaves its tests as they are.
//
// docs/cli holds the generated CLI reference (hack/clidocs.sh), whose blocks are usage and
// flag listings, not commands: it is not read.
package docblocks

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Block is one fenced code block.
type Block struct {
	// File is the file holding it, relative to the repository's root: "README.md",
	// "docs/cli.md".
	File string
	// Line is the line of its opening fence, from 1.
	Line int
	// Heading is the line of the nearest heading above it, "## The CLI"; "" above any.
	Heading string
	// Lang is the fence's info string: "sh", "go", "text", "" for none.
	Lang string
	// Text is what the block holds, each line ending in a newline.
	Text string
}

// Files returns the files the package reads, relative to root: README.md, then docs/*.md in
// lexical order.
func Files(root string) ([]string, error) {
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, err
	}
	files := []string{"README.md"}
	for _, d := range docs {
		rel, err := filepath.Rel(root, d)
		if err != nil {
			return nil, err
		}
		files = append(files, filepath.ToSlash(rel))
	}
	slices.Sort(files[1:])
	return files, nil
}

// Parse returns the fenced code blocks of the Markdown text of file, in order. A block opens
// with a line of three backquotes and an info string, and closes with a line of three
// backquotes alone.
func Parse(file, text string) ([]Block, error) {
	blocks, _, err := scan(file, text)
	return blocks, err
}

// heading is a heading line outside blocks.
type heading struct {
	line  int
	text  string
	level int
}

// scan returns the blocks and the headings of text.
func scan(file, text string) ([]Block, []heading, error) {
	var blocks []Block
	var headings []heading
	var open *Block
	current := ""
	for i, line := range strings.Split(text, "\n") {
		switch {
		case open != nil && line == "```":
			blocks = append(blocks, *open)
			open = nil
		case open != nil:
			open.Text += line + "\n"
		case strings.HasPrefix(line, "```"):
			open = &Block{File: file, Line: i + 1, Heading: current, Lang: strings.TrimPrefix(line, "```")}
		case strings.HasPrefix(line, "#"):
			current = line
			headings = append(headings, heading{line: i + 1, text: line, level: len(line) - len(strings.TrimLeft(line, "#"))})
		}
	}
	if open != nil {
		return nil, nil, fmt.Errorf("%s:%d: the block is never closed", file, open.Line)
	}
	return blocks, headings, nil
}

// All returns the blocks of every file Files names, file by file.
func All(root string) ([]Block, error) {
	files, err := Files(root)
	if err != nil {
		return nil, err
	}
	var all []Block
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			return nil, err
		}
		blocks, err := Parse(f, string(b))
		if err != nil {
			return nil, err
		}
		all = append(all, blocks...)
	}
	return all, nil
}

// Section returns the blocks of lang ("sh", "go") in the section whose heading line is
// heading ("## The CLI"), subsections included, from whichever of README.md and docs/*.md
// holds it. Exactly one file must hold that heading, once.
func Section(root, heading, lang string) ([]Block, error) {
	files, err := Files(root)
	if err != nil {
		return nil, err
	}
	var found string
	var blocks []Block
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			return nil, err
		}
		all, headings, err := scan(f, string(b))
		if err != nil {
			return nil, err
		}
		start, end := -1, -1
		for i, h := range headings {
			if h.text != heading {
				continue
			}
			if found != "" {
				return nil, fmt.Errorf("%s and %s:%d both have the heading %q", found, f, h.line, heading)
			}
			found, start = fmt.Sprintf("%s:%d", f, h.line), h.line
			for _, next := range headings[i+1:] {
				if next.level <= h.level {
					end = next.line
					break
				}
			}
		}
		if start < 0 {
			continue
		}
		for _, bl := range all {
			if bl.Line > start && (end < 0 || bl.Line < end) && bl.Lang == lang {
				blocks = append(blocks, bl)
			}
		}
	}
	if found == "" {
		return nil, fmt.Errorf("no heading %q in README.md or docs/*.md", heading)
	}
	return blocks, nil
}
