// Package gemlog is the process logger the executor and the brain (and the device runner) share: zerolog
// lines with a timestamp and the service, JSON or for people (GEM_LOG_FORMAT), at GEM_LOG_LEVEL; a
// log/slog bridge for the libraries that log that way (River, goose, the receipt waiter, the MCP SDK); and
// Guarded, which turns a goroutine's panic into a logged error. It lives in the registry module, the leaf
// both binaries and the sql module already import, so the storage module does not carry the process's
// logging.
package gemlog

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"
)

// Log formats of New (GEM_LOG_FORMAT).
const (
	// FormatJSON writes one JSON object a line. The default.
	FormatJSON = "json"
	// FormatConsole writes lines for people, coloured only when the writer is a terminal.
	FormatConsole = "console"
)

// timeFormatOnce sets zerolog's time format, a global every logger reads as it writes a line, once: set at
// each New, it raced with the lines of the loggers made before.
var timeFormatOnce sync.Once

// New returns a process logger writing to w: JSON lines (format "" or "json"), or a console format for
// people ("console", GEM_LOG_FORMAT) that is coloured only when w is a terminal, so logs redirected to a file
// carry no ANSI escape codes. level is debug, info (the default), warn or error (GEM_LOG_LEVEL). Every line
// has a timestamp and service (the process: "executor", "brain").
func New(w io.Writer, service, level, format string) (zerolog.Logger, error) {
	lvl := zerolog.InfoLevel
	if level != "" {
		var err error
		if lvl, err = zerolog.ParseLevel(strings.ToLower(level)); err != nil || lvl > zerolog.ErrorLevel || lvl < zerolog.DebugLevel {
			return zerolog.Nop(), fmt.Errorf("GEM_LOG_LEVEL: %q is not a level (debug, info, warn or error)", level)
		}
	}
	switch strings.ToLower(format) {
	case "", FormatJSON:
	case FormatConsole:
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: "15:04:05.000", NoColor: !IsTerminal(w)}
	default:
		return zerolog.Nop(), fmt.Errorf("GEM_LOG_FORMAT: %q is not a format (json or console)", format)
	}
	timeFormatOnce.Do(func() { zerolog.TimeFieldFormat = time.RFC3339Nano })
	return zerolog.New(w).Level(lvl).With().Timestamp().Str("service", service).Logger(), nil
}

// IsTerminal reports whether w is a terminal (an *os.File on a TTY).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(interface{ Fd() uintptr })
	if !ok {
		return false
	}
	return isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd())
}

// Slog returns a *slog.Logger that writes through log (its level, writer and fields), for libraries that log
// with log/slog: River, gemsql.Migrate, gemsql.ReceiptWaiter.
func Slog(log zerolog.Logger) *slog.Logger {
	return slog.New(zerolog.NewSlogHandler(log))
}
