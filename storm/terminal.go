package storm

import (
	"io"

	"golang.org/x/sys/unix"
)

// fder is a writer backed by a file descriptor, such as *os.File.
type fder interface{ Fd() uintptr }

// isTerminal reports whether w is a terminal: the check
// golang.org/x/term.IsTerminal makes (the terminal attributes can be read),
// without the extra module.
func isTerminal(w io.Writer) bool {
	f, ok := w.(fder)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// terminalWidth returns w's width in columns, or 0 if w is not a terminal
// or does not say.
func terminalWidth(w io.Writer) int {
	f, ok := w.(fder)
	if !ok {
		return 0
	}
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return 0
	}
	return int(ws.Col)
}
