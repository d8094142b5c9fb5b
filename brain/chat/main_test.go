package chat_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/gemhq/gem/brain/internal/testenv"
	"go.uber.org/goleak"
)

// shared is the package's database and the executor that serves it: the agents' calls run there, each test
// with a chat of its own.
var shared struct {
	dbURL string
}

// TestMain fails the package's tests when a goroutine outlives them: a turn, a lease renewal or a receipt
// waiter left running. It is looked for once the shared executor has stopped.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(suite{m})
}

// suite is the tests run between the start and the stop of what they share.
type suite struct{ m *testing.M }

func (s suite) Run() int {
	env, err := testenv.StartShared(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer env.Stop()
	shared.dbURL = env.DatabaseURL
	return s.m.Run()
}
