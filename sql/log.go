package gemsql

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"
)

// Log formats of NewLogger (GEM_LOG_FORMAT).
const (
	// LogFormatJSON writes one JSON object a line. The default.
	LogFormatJSON = "json"
	// LogFormatConsole writes lines for people, coloured only when the writer is a terminal.
	LogFormatConsole = "console"
)

// NewLogger returns a process logger writing to w: JSON lines (format "" or "json"), or a console format for
// people ("console", GEM_LOG_FORMAT) that is coloured only when w is a terminal, so logs redirected to a file
// carry no ANSI escape codes. level is debug, info (the default), warn or error (GEM_LOG_LEVEL). Every line
// has a timestamp and service (the process: "executor", "brain").
func NewLogger(w io.Writer, service, level, format string) (zerolog.Logger, error) {
	lvl := zerolog.InfoLevel
	if level != "" {
		var err error
		if lvl, err = zerolog.ParseLevel(strings.ToLower(level)); err != nil || lvl > zerolog.ErrorLevel || lvl < zerolog.DebugLevel {
			return zerolog.Nop(), fmt.Errorf("GEM_LOG_LEVEL: %q is not a level (debug, info, warn or error)", level)
		}
	}
	switch strings.ToLower(format) {
	case "", LogFormatJSON:
	case LogFormatConsole:
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: "15:04:05.000", NoColor: !IsTerminal(w)}
	default:
		return zerolog.Nop(), fmt.Errorf("GEM_LOG_FORMAT: %q is not a format (json or console)", format)
	}
	zerolog.TimeFieldFormat = time.RFC3339Nano
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
// with log/slog: River, Migrate, ReceiptWaiter.
func Slog(log zerolog.Logger) *slog.Logger {
	return slog.New(zerolog.NewSlogHandler(log))
}
