package gemsql_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/gemhq/gem/sql/gemsql"
	"github.com/gemhq/gem/sql/sqltest"
	"github.com/stretchr/testify/require"
)

// TestCallerEnsureConcurrently: sessions recording the same new caller at once all succeed (a statement
// whose insert waited on another's saw no row, and one of two brain mcp started together did not start).
func TestCallerEnsureConcurrently(t *testing.T) {
	t.Parallel()
	pool, _ := sqltest.NewDB(t)
	ctx := context.Background()
	for round := range 20 {
		name := fmt.Sprintf("together-%d", round)
		var wg sync.WaitGroup
		errs := make([]error, 8)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = gemsql.CallerEnsure(ctx, pool, name, gemsql.CallerService, []string{"*"}, "made by "+t.Name())
			}()
		}
		wg.Wait()
		for _, err := range errs {
			require.NoError(t, err, name)
		}
	}
}
