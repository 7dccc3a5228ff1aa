package tlsconf

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// KeepKeys is how many keys a KeyFile keeps: with a rotation a day, as
// crypto/tls rotates the keys it keeps in memory, a week of tickets still
// decrypts.
const KeepKeys = 7

// KeyFile is a session-ticket key file: keys that outlive the process, and
// that every process of a group reads. Its text holds one key a line,
// newest first, the key's creation time (Unix seconds) then its 32 bytes in
// hex; lines starting with # are comments:
//
//	# stampede session-ticket keys: the first encrypts, all decrypt
//	1798000000 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
//
// Processes lock the file (flock) to read or rotate it, so siblings never
// see half a rotation nor rotate twice.
type KeyFile struct {
	// Path is the file. It is created (mode 0600) with one fresh key if it
	// does not exist.
	Path string
	// Rotate is how old the newest key may grow before Refresh puts a new
	// one first. 0: never rotate.
	Rotate time.Duration
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// ticketKey is one key of a KeyFile.
type ticketKey struct {
	created time.Time
	key     [32]byte
}

// Refresh reads the file, creating it or rotating it first when its newest
// key is older than Rotate (at most KeepKeys are kept), and returns its
// keys newest first, ready for tls.Config.SetSessionTicketKeys.
func (f KeyFile) Refresh() ([][32]byte, error) {
	now := time.Now
	if f.Now != nil {
		now = f.Now
	}
	fd, err := os.OpenFile(f.Path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("ticket keys: %w", err)
	}
	defer fd.Close()
	if err := unix.Flock(int(fd.Fd()), unix.LOCK_EX); err != nil {
		return nil, fmt.Errorf("ticket keys: lock %s: %w", f.Path, err)
	}
	defer unix.Flock(int(fd.Fd()), unix.LOCK_UN)
	keys, err := parseKeys(fd)
	if err != nil {
		return nil, fmt.Errorf("ticket keys: %s: %w", f.Path, err)
	}
	t := now()
	if len(keys) == 0 || f.Rotate > 0 && t.Sub(keys[0].created) >= f.Rotate {
		var k ticketKey
		k.created = t
		if _, err := rand.Read(k.key[:]); err != nil {
			return nil, err
		}
		keys = append([]ticketKey{k}, keys[:min(len(keys), KeepKeys-1)]...)
		if err := writeKeys(fd, keys); err != nil {
			return nil, fmt.Errorf("ticket keys: %s: %w", f.Path, err)
		}
	}
	out := make([][32]byte, len(keys))
	for i, k := range keys {
		out[i] = k.key
	}
	return out, nil
}

// parseKeys reads a key file's lines.
func parseKeys(r io.Reader) ([]ticketKey, error) {
	var keys []ticketKey
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		ts, hx, ok := strings.Cut(line, " ")
		sec, err := strconv.ParseInt(ts, 10, 64)
		raw, herr := hex.DecodeString(strings.TrimSpace(hx))
		if !ok || err != nil || herr != nil || len(raw) != 32 {
			return nil, fmt.Errorf("line %d: want <unix seconds> <64 hex digits>", n)
		}
		var k ticketKey
		k.created = time.Unix(sec, 0)
		copy(k.key[:], raw)
		keys = append(keys, k)
	}
	return keys, sc.Err()
}

// writeKeys rewrites the locked file in place with keys.
func writeKeys(fd *os.File, keys []ticketKey) error {
	var b bytes.Buffer
	b.WriteString("# stampede session-ticket keys: the first encrypts, all decrypt\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "%d %s\n", k.created.Unix(), hex.EncodeToString(k.key[:]))
	}
	if err := fd.Truncate(0); err != nil {
		return err
	}
	if _, err := fd.WriteAt(b.Bytes(), 0); err != nil {
		return err
	}
	return fd.Sync()
}
