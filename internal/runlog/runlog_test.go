package runlog_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/runlog"
)

func TestHeadTail(t *testing.T) {
	l := runlog.New(100, nil)
	for i := range 100 {
		fmt.Fprintf(l, "line %03d\n", i) // 9 bytes each
	}
	l.Close("clean")
	got := string(l.Bytes())
	require.True(t, strings.HasPrefix(got, "line 000\nline 001\n"), got)
	require.True(t, strings.HasSuffix(got, "line 098\nline 099\n"), got)
	require.Contains(t, got, "bytes omitted")
	require.LessOrEqual(t, len(got), 100+40)
	lines := l.Lines()
	// head + marker + tail, and every stored line is whole.
	var omitted int
	for _, s := range lines {
		if strings.HasSuffix(s, "bytes omitted …") {
			_, err := fmt.Sscanf(s, "… %d bytes omitted …", &omitted)
			require.NoError(t, err)
		} else {
			require.Regexp(t, `^line \d{3}$`, s)
		}
	}
	require.Equal(t, 100*9, omitted+len(got)-len(runlog.Marker(omitted))-1)
}

func TestSmallLogUnbounded(t *testing.T) {
	l := runlog.New(1000, nil)
	_, _ = l.Write([]byte("a\nb"))
	require.Equal(t, "a\n", string(l.Bytes()))
	l.Close("errored")
	require.Equal(t, "a\nb\n", string(l.Bytes()))
	v, done := l.Done()
	require.True(t, done)
	require.Equal(t, "errored", v)
}

func TestRedactionAcrossWrites(t *testing.T) {
	const canary = "CANARY-s3cr3t-value"
	l := runlog.New(1<<20, func(s string) string { return strings.ReplaceAll(s, canary, "[REDACTED]") })
	_, live := l.Subscribe(t.Context())
	_, _ = l.Write([]byte("token=CANARY-s3"))
	_, _ = l.Write([]byte("cr3t-value end\nnext CANARY-s3cr3t"))
	_, _ = l.Write([]byte("-value"))
	l.Close("clean")
	var streamed []string
	for s := range live {
		streamed = append(streamed, s)
	}
	require.Equal(t, []string{"token=[REDACTED] end", "next [REDACTED]"}, streamed)
	require.NotContains(t, string(l.Bytes()), "s3cr3t")
	require.Equal(t, "token=[REDACTED] end\nnext [REDACTED]\n", string(l.Bytes()))
}

func TestSubscribeMidRunAndAfterClose(t *testing.T) {
	l := runlog.New(1<<20, nil)
	l.Printf("== init ==")
	replay, live := l.Subscribe(t.Context())
	require.Equal(t, []string{"== init =="}, replay)
	l.Printf("== plan ==")
	require.Equal(t, "== plan ==", <-live)
	l.Close("drifted")
	_, ok := <-live
	require.False(t, ok)
	replay, live = l.Subscribe(t.Context())
	require.Equal(t, []string{"== init ==", "== plan =="}, replay)
	_, ok = <-live
	require.False(t, ok)
}

func TestSlowSubscriberDoesNotBlock(t *testing.T) {
	l := runlog.New(1<<20, nil)
	_, live := l.Subscribe(t.Context()) // never read until the end
	for i := range 10000 {
		fmt.Fprintf(l, "line %d\n", i)
	}
	l.Close("clean")
	var n int
	var marker bool
	for s := range live {
		n++
		if strings.Contains(s, "dropped") {
			marker = true
		}
	}
	require.Less(t, n, 10000)
	require.Positive(t, n)
	_ = marker // the marker is delivered only once the reader makes room
}

func TestSubscriptionEndsWithContext(t *testing.T) {
	l := runlog.New(1<<20, nil)
	sctx, scancel := context.WithCancel(t.Context())
	_, live := l.Subscribe(sctx)
	scancel()
	for range live {
	}
	l.Printf("after") // must not panic on a closed channel
	l.Close("clean")
}

func TestConcurrentWritersAndSubscribers(t *testing.T) {
	l := runlog.New(4096, func(s string) string { return strings.ReplaceAll(s, "SECRET", "[REDACTED]") })
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				fmt.Fprintf(l, "w%d SECRET %d\n", w, i)
			}
		}()
	}
	var rg sync.WaitGroup
	for range 4 {
		rg.Add(1)
		go func() {
			defer rg.Done()
			replay, live := l.Subscribe(t.Context())
			for _, s := range replay {
				if strings.Contains(s, "SECRET") {
					t.Errorf("unredacted replay %q", s)
				}
			}
			for s := range live {
				if strings.Contains(s, "SECRET") {
					t.Errorf("unredacted %q", s)
				}
			}
		}()
	}
	wg.Wait()
	l.Close("clean")
	rg.Wait()
	require.LessOrEqual(t, len(l.Bytes()), 4096+64)
	require.NotContains(t, string(l.Bytes()), "SECRET")
}
