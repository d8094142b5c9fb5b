package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// startExecutor runs an executor on dbURL and, when wait is set, waits until it has registered.
func startExecutor(bins binaries, dbURL, id string, env []string, logw io.Writer, pool *pgxpool.Pool, wait bool) (*proc, error) {
	env = append([]string{"DATABASE_URL=" + dbURL, "GEM_REGISTRY=" + filepath.Join(bins.root, "tools.registry.json"),
		"GEM_EXECUTOR_ID=" + id, "GEM_LOG_LEVEL=warn"}, env...)
	p, err := startProc(id, bins.executor, []string{"run"}, env, logw)
	if err != nil || !wait {
		return p, err
	}
	err = p.awaitCondition(60*time.Second, func() (bool, error) {
		var n int
		err := pool.QueryRow(context.Background(),
			`SELECT count(*) FROM core_executors WHERE id = $1 AND stopped_at IS NULL`, id).Scan(&n)
		return n == 1, err
	})
	if err != nil {
		p.kill()
		return nil, err
	}
	return p, nil
}

// brainProc is a running brain with its address and bearer token.
type brainProc struct {
	*proc
	url, token string
}

// startBrain runs the brain (rules planner, bearer-token auth) on a free loopback port and waits for
// GET /health.
func startBrain(bins binaries, dbURL string, env []string, logw io.Writer) (*brainProc, error) {
	return startBrainAs(bins, dbURL, "brain", randomHex(24), env, logw)
}

// startBrainAs is startBrain with the process's name (in logs) and its caller's token chosen: brains given
// one token serve one caller, whose request keys are the same on each.
func startBrainAs(bins binaries, dbURL, name, token string, env []string, logw io.Writer) (*brainProc, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	_ = l.Close()
	env = append([]string{"DATABASE_URL=" + dbURL, "GEM_REGISTRY=" + filepath.Join(bins.root, "tools.registry.json"),
		"GEM_BRAIN_ADDR=" + addr, "GEM_BRAIN_TOKENS=proof:" + token, "GEM_BRAIN_PLANNER=rules", "GEM_LOG_LEVEL=warn"}, env...)
	p, err := startProc(name, bins.brain, []string{"serve"}, env, logw)
	if err != nil {
		return nil, err
	}
	b := &brainProc{proc: p, url: "http://" + addr, token: token}
	err = p.awaitCondition(60*time.Second, func() (bool, error) {
		resp, err := http.Get(b.url + "/health")
		if err != nil {
			return false, err
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, fmt.Errorf("GET /health: %s", resp.Status)
	})
	if err != nil {
		p.kill()
		return nil, err
	}
	return b, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
