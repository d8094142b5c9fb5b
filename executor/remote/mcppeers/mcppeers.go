// Package mcppeers starts the real MCP peers GEM's executor tests talk to: the reference server-everything
// (npm @modelcontextprotocol/server-everything), which make mcp-peers installs into scripts/mcp-peers, and
// scripts/mcp-peers/binary-server.mjs, made with the MCP TypeScript SDK installed there. Like
// net/http/httptest, it is for tests; a test that needs a peer fails, never skips, without it.
package mcppeers

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// peersDir is scripts/mcp-peers of the repository (the folder with go.work above the working folder).
func peersDir(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return filepath.Join(dir, "scripts", "mcp-peers")
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("no go.work above the working folder: cannot find scripts/mcp-peers")
		}
		dir = parent
	}
}

// Everything returns the path of server-everything's command, found under the repository.
func Everything(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(peersDir(t), "node_modules", ".bin", "mcp-server-everything")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("the reference MCP server is not installed (%v): run make mcp-peers", err)
	}
	return bin
}

// BinaryServer returns the command and arguments of scripts/mcp-peers/binary-server.mjs, a stdio MCP server
// made with the MCP TypeScript SDK whose tools answer with files as base64 in every shape servers use.
func BinaryServer(t testing.TB) (string, []string) {
	t.Helper()
	dir := peersDir(t)
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		t.Fatalf("the MCP TypeScript SDK is not installed (%v): run make mcp-peers", err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not installed: %v", err)
	}
	return node, []string{filepath.Join(dir, "binary-server.mjs")}
}

// StartEverythingHTTP starts server-everything's streamable-HTTP transport on port (0: a free one), waits
// until it listens, and returns the port and what stops it (also called when the test ends).
func StartEverythingHTTP(t testing.TB, port int) (int, func()) {
	t.Helper()
	if port == 0 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port = l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
	}
	cmd := exec.Command(Everything(t), "streamableHttp")
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	cmd.Stdout = io.Discard
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
	}
	t.Cleanup(stop)
	listening := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "listening on port") {
				close(listening)
				break
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	select {
	case <-listening:
	case <-time.After(30 * time.Second):
		stop()
		t.Fatalf("server-everything did not listen on port %d", port)
	}
	return port, stop
}
