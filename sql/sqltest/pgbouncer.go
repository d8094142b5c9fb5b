package sqltest

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// PgBouncer starts a PgBouncer in transaction mode in front of dbURL's server for the rest of the test and
// returns dbURL through it. PgBouncer is Debian's pgbouncer package (.ci/run installs it).
func PgBouncer(t testing.TB, dbURL string) string {
	t.Helper()
	bin, err := exec.LookPath("pgbouncer")
	if err != nil {
		bin = "/usr/sbin/pgbouncer" // Debian installs it outside a user's PATH
		if _, err := os.Stat(bin); err != nil {
			t.Fatalf("pgbouncer is not installed (apt-get install pgbouncer): %v", err)
		}
	}
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatalf("error parsing %s: %v", dbURL, err)
	}
	addr := FreeAddr(t)
	_, port, _ := net.SplitHostPort(addr)

	// PgBouncer refuses to run as root; as root it runs as nobody, who must read its files.
	dir, err := os.MkdirTemp("", "gem-pgbouncer-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ini := fmt.Sprintf(`[databases]
* = host=%s port=%s

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %s
unix_socket_dir =
auth_type = trust
auth_file = %s
pool_mode = transaction
max_client_conn = 1000
default_pool_size = 20
`, u.Hostname(), u.Port(), port, filepath.Join(dir, "users.txt"))
	user := u.User.Username()
	for name, text := range map[string]string{"pgbouncer.ini": ini, "users.txt": strconv.Quote(user) + ` ""` + "\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{filepath.Join(dir, "pgbouncer.ini")}
	if os.Geteuid() == 0 {
		args = append([]string{"-u", "nobody"}, args...)
	}
	cmd := exec.Command(bin, args...)
	var out SyncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("error starting pgbouncer: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM) // immediate shutdown
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("pgbouncer's log:\n%s", out.String())
		}
	})

	pooled := *u
	pooled.Host = addr
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := pgx.Connect(ctx, pooled.String())
		if err == nil {
			err = conn.Ping(ctx)
			_ = conn.Close(ctx)
		}
		cancel()
		if err == nil {
			return pooled.String()
		}
		select {
		case <-exited:
			t.Fatalf("pgbouncer exited: %s", out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("pgbouncer does not answer on %s: %v\n%s", addr, err, out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
