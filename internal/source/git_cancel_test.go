package source

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestCheckoutCancel holds git's first request until the context ends, and
// meanwhile reads the command line of every process on the machine.
func TestCheckoutCancel(t *testing.T) {
	tests := []struct {
		name    string
		ctx     func(context.Context) (context.Context, context.CancelFunc)
		cancel  bool // cancel once the request arrives
		wantErr error
	}{
		{name: "cancel", ctx: context.WithCancel, cancel: true, wantErr: context.Canceled},
		{
			name: "deadline",
			ctx: func(ctx context.Context) (context.Context, context.CancelFunc) {
				return context.WithTimeout(ctx, 4*time.Second) // long enough for git to start under load
			},
			wantErr: context.DeadlineExceeded,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			arrived := make(chan struct{})
			var once sync.Once
			srv := newGitServer(t, f, func(s *gitServer) {
				s.hook = func(r *http.Request) {
					once.Do(func() { close(arrived) })
					<-r.Context().Done() // until git goes away
				}
			})
			ctx, cancel := tt.ctx(t.Context())
			defer cancel()
			g := Git{URL: srv.repoURL(), Ref: "main", CredentialsFile: writeCredentials(t, canaryToken)}

			done := make(chan error, 1)
			go func() {
				_, _, err := g.Checkout(ctx, t.TempDir(), t.TempDir())
				done <- err
			}()
			select {
			case <-arrived:
			case err := <-done:
				t.Fatalf("checkout returned before its request arrived: %v", err)
			}

			// git and git-remote-http are running now, the latter with the
			// repository URL in its arguments.
			cmdlines := processCmdlines(t)
			var gitProcs int
			for pid, cmdline := range cmdlines {
				requireNoSecret(t, cmdline, canaryToken)
				if strings.Contains(cmdline, srv.URL) {
					gitProcs++
					t.Logf("pid %s: %s", pid, cmdline)
				}
			}
			require.NotZero(t, gitProcs, "no process with the repository URL in its arguments")

			if tt.cancel {
				cancel()
			}
			var err error
			select {
			case err = <-done:
			case <-time.After(waitDelay + 10*time.Second):
				t.Fatal("checkout did not return after the context ended")
			}
			require.ErrorIs(t, err, tt.wantErr)
			requireNoSecret(t, err.Error(), canaryToken)

			// Nothing of git is left running.
			require.Eventually(t, func() bool {
				for _, cmdline := range processCmdlines(t) {
					if strings.Contains(cmdline, srv.URL) {
						return false
					}
				}
				return true
			}, 5*time.Second, 50*time.Millisecond)
		})
	}
}

// processCmdlines reads /proc/*/cmdline, with arguments joined by spaces.
func processCmdlines(t *testing.T) map[string]string {
	t.Helper()
	paths, err := filepath.Glob("/proc/[0-9]*/cmdline")
	require.NoError(t, err)
	require.NotEmpty(t, paths, "/proc is not mounted")
	out := make(map[string]string, len(paths))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // the process exited
		}
		out[filepath.Base(filepath.Dir(p))] = strings.ReplaceAll(string(b), "\x00", " ")
	}
	return out
}

// TestCheckTreeStopsWhenCancelled: the walk of a checkout runs under the
// run's context.
func TestCheckTreeStopsWhenCancelled(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, 0o644, map[string]string{"a.tf": "#", "m/b.tf": "#"})
	require.NoError(t, os.Symlink("/dev/zero", filepath.Join(dir, "m", "z.tf")))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := checkTree(ctx, dir)
	require.ErrorIs(t, err, context.Canceled)
	require.NotErrorIs(t, err, ErrEscapes, "stopped before reaching the link")
	require.ErrorIs(t, checkTree(t.Context(), dir), ErrEscapes)
}
