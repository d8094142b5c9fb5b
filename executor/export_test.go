package executor

// AttemptInsertSQL is the relay's statement handing a call to another device, for tests of its guard.
const AttemptInsertSQL = attemptInsertSQL
