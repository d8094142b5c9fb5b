package executor

import "github.com/gemhq/gem/executor/internal/devicerelay"

// AttemptInsertSQL is the relay's statement handing a call to another device, for tests of its guard.
const AttemptInsertSQL = devicerelay.AttemptInsertSQL
