package businesshandlers

import (
	"testing"

	"github.com/gemhq/gem/executor"
	"github.com/gemhq/gem/executor/filestore"
	businesspack "github.com/gemhq/gem/packs/business"
	"github.com/stretchr/testify/require"
)

// TestFileStoreSettingIsTheExecutors: the contract names the file store's variable and default itself (it
// imports no executor package); they are the executor's, which its MCP servers' files go under too.
func TestFileStoreSettingIsTheExecutors(t *testing.T) {
	t.Parallel()
	require.Equal(t, filestore.EnvDir, businesspack.EnvFileStore)
	require.Equal(t, filestore.DefaultDir, businesspack.FileStoreDefault)
	require.Equal(t, filestore.DefaultDir, businesspack.Config{}.WithDefaults().FileStore)
}

// TestEveryToolHasAHandler: register adds a handler for each tool of businesspack.Tools, and for no other
// tool (the os pack's are oshandlers's, whatever forOS gives them).
func TestEveryToolHasAHandler(t *testing.T) {
	t.Parallel()
	h := executor.Handlers{}
	register(h, businesspack.Config{})
	require.ElementsMatch(t, businesspack.Tools, h.Names())
}
