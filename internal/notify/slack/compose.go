package slack

import (
	"fmt"
	"strings"
	"unicode/utf8"

	slackgo "github.com/slack-go/slack"
)

// compose packs the groups' lines into sections between head and tail so
// that every section, the block count and the total text stay within
// Slack's limits; what does not fit is counted in a final "…and N more".
func compose(head []slackgo.Block, groups []group, tail []slackgo.Block) []slackgo.Block {
	budget := maxTotalText - moreReserve
	for _, b := range head {
		budget -= blockTextLen(b)
	}
	for _, b := range tail {
		budget -= blockTextLen(b)
	}
	slots := maxBlocks - len(head) - len(tail)

	var sections []string
	var cur strings.Builder
	curLen, omitted, stopped := 0, 0, false
	add := func(piece string) bool {
		n := utf8.RuneCountInString(piece)
		if curLen > 0 {
			n++ // the newline
		}
		if n > budget {
			return false
		}
		if curLen > 0 && curLen+n > maxSectionText-moreReserve {
			if len(sections)+2 > slots {
				return false
			}
			sections = append(sections, cur.String())
			cur.Reset()
			curLen = 0
			n = utf8.RuneCountInString(piece)
		}
		if curLen > 0 {
			cur.WriteByte('\n')
		}
		cur.WriteString(piece)
		curLen += n
		budget -= n
		return true
	}
	for _, g := range groups {
		if stopped || slots < 1 {
			omitted += len(g.lines) + g.more
			continue
		}
		for i, line := range g.lines {
			piece := line
			if i == 0 && g.title != "" {
				piece = g.title + "\n" + line
			}
			if !add(piece) {
				stopped = true
				omitted += len(g.lines) - i
				break
			}
		}
		omitted += g.more
	}
	if omitted > 0 && slots >= 1 {
		more := fmt.Sprintf("_…and %d more_", omitted)
		if curLen > 0 {
			cur.WriteByte('\n')
		}
		cur.WriteString(more) // fits: moreReserve was kept in the section and the budget
		curLen++
	}
	if curLen > 0 {
		sections = append(sections, cur.String())
	}
	out := make([]slackgo.Block, 0, len(head)+len(sections)+len(tail))
	out = append(out, head...)
	for _, s := range sections {
		out = append(out, section(s))
	}
	return append(out, tail...)
}

// blockTextLen is the number of characters of text in a block, as the
// aggregate limit counts them.
func blockTextLen(b slackgo.Block) int {
	n := 0
	count := func(t *slackgo.TextBlockObject) {
		if t != nil {
			n += utf8.RuneCountInString(t.Text)
		}
	}
	switch b := b.(type) {
	case *slackgo.HeaderBlock:
		count(b.Text)
	case *slackgo.SectionBlock:
		count(b.Text)
		for _, f := range b.Fields {
			count(f)
		}
	case *slackgo.ContextBlock:
		for _, e := range b.ContextElements.Elements {
			if t, ok := e.(*slackgo.TextBlockObject); ok {
				count(t)
			}
		}
	}
	return n
}
