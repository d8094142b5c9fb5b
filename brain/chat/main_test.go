package chat_test

import (
	"context"
	"sync"
	"testing"

	"github.com/gemhq/gem/brain/internal/testenv"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// shared is the package's database and the executor that serves it: the agents' calls run there, each test
// with a chat of its own. It starts on first use, so the tests that need neither (a skill's files, say) run
// without PostgreSQL.
var shared struct {
	once sync.Once
	env  *testenv.Shared
	err  error
}

// sharedDatabase is the shared database's URL, starting it and its executor on first use.
func sharedDatabase(t testing.TB) string {
	t.Helper()
	shared.once.Do(func() { shared.env, shared.err = testenv.StartShared(context.Background()) })
	require.NoError(t, shared.err)
	return shared.env.DatabaseURL
}

// TestMain fails the package's tests when a goroutine outlives them: a turn, a lease renewal or a receipt
// waiter left running. It is looked for once the shared executor has stopped.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(suite{m})
}

// suite is the tests run, then the stop of what they shared, if one of them started it.
type suite struct{ m *testing.M }

func (s suite) Run() int {
	code := s.m.Run()
	if shared.env != nil {
		shared.env.Stop()
	}
	return code
}
