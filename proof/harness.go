package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// repoRoot is the folder holding go.work and tools.registry.json: the working folder or one of its parents.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if fileExists(filepath.Join(dir, "go.work")) && fileExists(filepath.Join(dir, "tools.registry.json")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("run from inside the GEM repository (no go.work and tools.registry.json above the working folder)")
		}
		dir = parent
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// cluster is a PostgreSQL server: the one DATABASE_URL names, or a private cluster managed by
// sql/dev-postgres.sh (which can also be restarted).
type cluster struct {
	url    string
	script string
	env    []string // GEM_PG_* for dev-postgres.sh; nil for DATABASE_URL
	dir    string   // a private cluster's folder, when the test chose it
}

// startCluster starts the private cluster in dir (empty: the repository's usual one) and returns it.
func startCluster(root, dir string) (*cluster, error) { return startClusterOn(root, dir, 0) }

// startClusterOn is startCluster with the port a new cluster in dir takes (0: the first free from 25432).
func startClusterOn(root, dir string, port int) (*cluster, error) {
	c := &cluster{script: filepath.Join(root, "sql", "dev-postgres.sh"), env: []string{}, dir: dir}
	if dir != "" {
		// A cluster of its own picks a free port, whatever port the usual one was told to use.
		c.env = append(c.env, "GEM_PG_DIR="+dir, "GEM_PG_PORT=")
		if port != 0 {
			c.env = append(c.env, fmt.Sprintf("GEM_PG_PORT=%d", port))
		}
	}
	out, err := c.run("start")
	if err != nil {
		return nil, err
	}
	c.url = strings.TrimSpace(out)
	return c, nil
}

// benchCluster is the server DATABASE_URL names, or else the repository's private cluster.
func benchCluster(root string) (*cluster, error) {
	if u := os.Getenv("DATABASE_URL"); u != "" {
		return &cluster{url: u}, nil
	}
	return startCluster(root, "")
}

func (c *cluster) run(cmd string) (string, error) { return c.runWith(cmd) }

// runWith runs dev-postgres.sh's cmd with env added to the cluster's.
func (c *cluster) runWith(cmd string, env ...string) (string, error) {
	x := exec.Command(c.script, cmd)
	x.Env = append(append(os.Environ(), c.env...), env...)
	var stderr strings.Builder
	x.Stderr = &stderr
	out, err := x.Output()
	if err != nil {
		return "", fmt.Errorf("%s %s: %v\n%s", c.script, cmd, err, stderr.String())
	}
	return string(out), nil
}

// restart restarts the private server (a fast shutdown: every connection is cut).
func (c *cluster) restart() error { return c.control("restart") }

// control runs dev-postgres.sh's cmd on a private server, which a server named by DATABASE_URL is not.
func (c *cluster) control(cmd string) error {
	if c.script == "" {
		return fmt.Errorf("cannot %s a server named by DATABASE_URL", cmd)
	}
	_, err := c.run(cmd)
	return err
}

// crash stops a private server at once, as a crash would: an immediate shutdown (SIGQUIT to the
// postmaster), which cuts every connection without a checkpoint; starting it again recovers from its log.
func (c *cluster) crash() error {
	if c.dir == "" {
		return errors.New("only a cluster in a folder of its own can be crashed")
	}
	pidFile := filepath.Join(c.dir, "data", "postmaster.pid")
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	if err != nil {
		return fmt.Errorf("%s: %w", pidFile, err)
	}
	if err := syscall.Kill(pid, syscall.SIGQUIT); err != nil {
		return err
	}
	for deadline := time.Now().Add(30 * time.Second); syscall.Kill(pid, 0) == nil; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			return fmt.Errorf("postmaster %d still running 30s after SIGQUIT", pid)
		}
	}
	return nil
}

// down stops a private server (a fast shutdown: every connection is cut) until up starts it again: an outage
// of the database as long as the caller makes it.
func (c *cluster) down() error { return c.control("stop") }

// up starts a server down stopped, on its port: a start that finds the port taken fails rather than moves
// the server, since its clients hold its URL.
func (c *cluster) up() error {
	u, err := url.Parse(c.url)
	if err != nil {
		return err
	}
	_, err = c.runWith("start", "GEM_PG_PORT="+u.Port())
	return err
}

// quietPort is a free loopback port below 25432, where dev-postgres.sh does not look for one: a cluster that
// is down for a while keeps its port, which another cluster starting meanwhile would take from 25432 up.
func quietPort() (int, error) {
	for range 100 {
		port := 20000 + rand.IntN(5000)
		if l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			_ = l.Close()
			return port, nil
		}
	}
	return 0, errors.New("no free port between 20000 and 25000")
}

// destroy stops a private cluster and deletes its data.
func (c *cluster) destroy() {
	if c.dir != "" {
		_, _ = c.run("destroy")
	}
}

// stop stops the private server.
func (c *cluster) stop() {
	if c.script != "" {
		_, _ = c.run("stop")
	}
}

// freshDatabase drops and recreates the database name and returns its URL.
func (c *cluster) freshDatabase(ctx context.Context, name string) (string, error) {
	conn, err := pgx.Connect(ctx, c.url)
	if err != nil {
		return "", fmt.Errorf("error connecting to %s: %w", c.url, err)
	}
	defer conn.Close(ctx)
	ident := pgx.Identifier{name}.Sanitize()
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+ident+" WITH (FORCE)"); err != nil {
		return "", err
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+ident); err != nil {
		return "", err
	}
	u, err := url.Parse(c.url)
	if err != nil {
		return "", err
	}
	u.Path = "/" + name
	return u.String(), nil
}

// dropDatabase removes a database made by freshDatabase.
func (c *cluster) dropDatabase(ctx context.Context, name string) error {
	conn, err := pgx.Connect(ctx, c.url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
	return err
}

// binaries are the programs under test and the repository they come from.
type binaries struct {
	root            string // the repository: its registry and sql/dev-postgres.sh
	executor, brain string
	// self runs this program's hidden roles (the bare River worker).
	self string
}

// findBinaries finds the repository above the working folder and uses dir's executor and brain when dir
// is set, and otherwise builds both into a temporary folder (removed by cleanup).
func findBinaries(dir string) (b binaries, cleanup func(), err error) {
	cleanup = func() {}
	if b.root, err = repoRoot(); err != nil {
		return b, cleanup, err
	}
	if b.self, err = os.Executable(); err != nil {
		return b, cleanup, err
	}
	if dir == "" {
		if dir, err = os.MkdirTemp("", "gem-proof-bin-"); err != nil {
			return b, cleanup, err
		}
		cleanup = func() { _ = os.RemoveAll(dir) }
		for _, m := range []string{"executor", "brain"} {
			cmd := exec.Command("go", "build", "-o", filepath.Join(dir, m), "./cmd/"+m)
			cmd.Dir = filepath.Join(b.root, m)
			if out, err := cmd.CombinedOutput(); err != nil {
				cleanup()
				return b, func() {}, fmt.Errorf("error building %s: %v\n%s", m, err, out)
			}
		}
	}
	b.executor, b.brain = filepath.Join(dir, "executor"), filepath.Join(dir, "brain")
	for _, p := range []string{b.executor, b.brain} {
		if !fileExists(p) {
			return b, cleanup, fmt.Errorf("%s does not exist (run make build, or leave -bin empty to build)", p)
		}
	}
	return b, cleanup, nil
}

// proc is a child process: an executor, a brain or a bare River worker.
type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error

	mu      sync.Mutex
	lines   []string // the last lines of its stderr, for error messages
	readyCh chan struct{}
	peakKB  int64
}

// startProc starts bin with args and env (added to this process's environment). Its stdout is watched for
// a line "ready"; its stderr goes to logw and the last lines are kept.
func startProc(name, bin string, args, env []string, logw io.Writer) (*proc, error) {
	p := &proc{name: name, done: make(chan struct{}), readyCh: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = append(os.Environ(), env...)
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("error starting %s: %w", name, err)
	}
	var pipes sync.WaitGroup
	pipes.Add(2)
	go func() {
		defer pipes.Done()
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if sc.Text() == "ready" {
				close(p.readyCh)
			}
		}
	}()
	go func() {
		defer pipes.Done()
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64*1024), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if logw != nil {
				fmt.Fprintf(logw, "%s: %s\n", name, line)
			}
			p.mu.Lock()
			p.lines = append(p.lines, line)
			if len(p.lines) > 20 {
				p.lines = p.lines[1:]
			}
			p.mu.Unlock()
		}
	}()
	go func() {
		pipes.Wait()
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// tail is the end of the process's stderr.
func (p *proc) tail() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.lines, "\n")
}

// awaitReady waits for the "ready" line.
func (p *proc) awaitReady(within time.Duration) error {
	select {
	case <-p.readyCh:
		return nil
	case <-p.done:
		return fmt.Errorf("%s exited before it was ready (%v):\n%s", p.name, p.err, p.tail())
	case <-time.After(within):
		return fmt.Errorf("%s not ready after %s:\n%s", p.name, within, p.tail())
	}
}

// awaitCondition polls check until it returns true, the process exits or within passes.
func (p *proc) awaitCondition(within time.Duration, check func() (bool, error)) error {
	deadline := time.Now().Add(within)
	for {
		ok, err := check()
		if ok {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s exited before it was ready (%v):\n%s", p.name, p.err, p.tail())
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after %s (last check: %v):\n%s", p.name, within, err, p.tail())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// sampleRSS records the process's peak resident set size so far (VmHWM, Linux). stop reads it before the
// process ends, since /proc forgets it after.
func (p *proc) sampleRSS() {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
				p.mu.Lock()
				p.peakKB = max(p.peakKB, kb)
				p.mu.Unlock()
			}
		}
	}
}

// clockTick is the unit of the CPU times in /proc (USER_HZ, 100 on every Linux architecture's ABI).
const clockTick = 10 * time.Millisecond

// cpuTime is the CPU time (user + system) the running process has used (Linux); 0 if it cannot be read.
func (p *proc) cpuTime() time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	// Fields after the command name, which is in parentheses and may hold spaces: utime and stime are the
	// 12th and 13th.
	s := string(data)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(utime+stime) * clockTick
}

// machineCPU is the CPU time all CPUs of the machine have spent busy since boot (Linux /proc/stat: user,
// nice, system, irq, softirq, steal); 0 if it cannot be read.
func machineCPU() time.Duration {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(data), "\n")
	fields := strings.Fields(line)
	if len(fields) < 9 || fields[0] != "cpu" {
		return 0
	}
	var busy int64
	for _, i := range []int{1, 2, 3, 6, 7, 8} {
		v, _ := strconv.ParseInt(fields[i], 10, 64)
		busy += v
	}
	return time.Duration(busy) * clockTick
}

// peakRSS is the largest resident set size sampled, in KiB.
func (p *proc) peakRSS() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.peakKB
}

// kill ends the process at once (SIGKILL), as a crash would.
func (p *proc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// stop asks the process to stop (SIGTERM) and kills it if it has not within grace.
func (p *proc) stop(grace time.Duration) error {
	p.sampleRSS()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		var exit *exec.ExitError
		if errors.As(p.err, &exit) {
			return fmt.Errorf("%s exited with %v:\n%s", p.name, p.err, p.tail())
		}
		return nil
	case <-time.After(grace):
		p.kill()
		return fmt.Errorf("%s did not stop within %s", p.name, grace)
	}
}

// exited says whether the process has ended.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}
