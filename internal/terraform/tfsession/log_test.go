package tfsession

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/driftwatch/driftwatch/internal/runlog"
	"github.com/driftwatch/driftwatch/internal/terraform/sandbox"
)

// lineWriter keeps stdout and stderr lines apart and redacts a secret
// split across writes.
func TestLineWriter(t *testing.T) {
	l := runlog.New(1<<20, nil)
	rl := newRunLog(l, logRedactor([]string{"topsecret"}, map[string]string{"v": "varvalue", "short": "ab"}))
	rl.header("plan")
	_, _ = rl.stdout().Write([]byte("out top"))
	_, _ = rl.tee(sandbox.NewTail(1024)).Write([]byte("err varv"))
	_, _ = rl.stdout().Write([]byte("secret done\nab "))
	_, _ = rl.tee(sandbox.NewTail(1024)).Write([]byte("alue\n"))
	rl.flush()
	require.Equal(t, "== plan ==\nout [REDACTED] done\nerr [REDACTED]\nab \n", string(l.Bytes()))

	// Without a log nothing is written and nothing breaks.
	none := newRunLog(nil, nil)
	none.header("init")
	_, _ = none.stdout().Write([]byte("x\n"))
	none.flush()
}

func TestLineWriterConcurrent(t *testing.T) {
	l := runlog.New(1<<20, nil)
	rl := newRunLog(l, logRedactor([]string{"topsecret"}, nil))
	var wg sync.WaitGroup
	for _, w := range []func() []byte{func() []byte { return []byte("o topsecret\n") }, func() []byte { return []byte("e topsecret\n") }} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out := rl.stdout()
			if w()[0] == 'e' {
				out = rl.tee(sandbox.NewTail(1024))
			}
			for range 200 {
				_, _ = out.Write(w())
			}
		}()
	}
	wg.Wait()
	for _, s := range l.Lines() {
		require.Contains(t, []string{"o [REDACTED]", "e [REDACTED]"}, s)
	}
}
