package executor

// Version is the executor's version, set at build time with -ldflags "-X github.com/gemhq/gem/executor.Version=...".
var Version = "dev"
