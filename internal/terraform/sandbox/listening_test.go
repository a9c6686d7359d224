package sandbox

import (
	"net"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// listening reads a namespace's listening TCP ports as pasta's forwards
// appear there: a port is ready once something listens on it.
func TestListening(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := uint16(ln.Addr().(*net.TCPAddr).Port)
	require.True(t, listening(os.Getpid(), nil), "no forwarded port: nothing to wait for")
	require.True(t, listening(os.Getpid(), []uint16{port}))
	require.NoError(t, ln.Close())
	require.False(t, listening(os.Getpid(), []uint16{port}), "closed: not ready")
}
