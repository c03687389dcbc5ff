package main

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// terminal reports whether w is a terminal, and its width in columns (0
// when unknown).
func terminal(w io.Writer) (bool, int) {
	f, ok := w.(*os.File)
	if !ok {
		return false, 0
	}
	fd := int(f.Fd())
	if _, err := unix.IoctlGetTermios(fd, unix.TCGETS); err != nil {
		return false, 0
	}
	ws, err := unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ)
	if err != nil {
		return true, 0
	}
	return true, int(ws.Col)
}
