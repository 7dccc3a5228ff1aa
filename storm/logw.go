package storm

import (
	"bytes"
	"io"
	"sync"
)

// prefixWriter returns a writer that copies whole lines to w, each prefixed
// with "[name] " (no prefix for an empty name), so the output of several
// child processes stays readable when interleaved.
func prefixWriter(w io.Writer, name string) io.Writer {
	p := &linePrefixer{w: w}
	if name != "" {
		p.prefix = []byte("[" + name + "] ")
	}
	return p
}

type linePrefixer struct {
	mu     sync.Mutex
	w      io.Writer
	prefix []byte
	buf    []byte
}

func (p *linePrefixer) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.buf = append(p.buf, b...)
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			break
		}
		line := append(append([]byte(nil), p.prefix...), p.buf[:i+1]...)
		if _, err := p.w.Write(line); err != nil {
			return len(b), err
		}
		p.buf = p.buf[i+1:]
	}
	return len(b), nil
}
