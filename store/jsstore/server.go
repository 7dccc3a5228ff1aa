package jsstore

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/stampede-dev/stampede/store"
)

// Server is a NATS server with JetStream embedded in this process, its
// file storage in one directory: the embedded default store that the
// target processes of a group share. It listens on a free port of
// 127.0.0.1 only (never the 4222 of a NATS the machine may run), and
// admits only clients with its credential: a password drawn at random
// when it starts, which URL carries. Another local user can reach the
// port, but can neither read the stream nor purge it or write to it.
type Server struct {
	ns   *server.Server
	lock *os.File
	dir  string
	sync *syncer
	user *url.Userinfo // the one credential the server admits
}

// serverUser is the user name of the embedded server's credential.
const serverUser = "stampede"

// readyTimeout bounds the server's start, recovery of its files included.
const readyTimeout = 5 * time.Minute

// StartServer verifies the files in dir (Verify: it refuses a damaged
// store rather than let recovery drop valid records), takes the
// directory's lock and starts the server, with its group-commit sync
// service (SyncSubject): JetStream writes every stored message to its
// block file before it acknowledges it, and a store opened with sync=1
// (the URL Host hands out) asks the service to fsync the block files
// before it ACKs; one fsync serves every append waiting for it.
func StartServer(dir string) (*Server, error) {
	return startServer(dir, serverConfig{})
}

// serverConfig holds what a test changes in a Server.
type serverConfig struct {
	// syncFile fsyncs a block file or folder by name; nil: syncFile.
	syncFile func(name string) error
}

func startServer(dir string, sc serverConfig) (*Server, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("store: jetstream dir: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(dir, "LOCK"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("store: jetstream dir: %w", err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		lock.Close()
		return nil, fmt.Errorf("%w: %s (another process serves this JetStream store)", store.ErrLocked, dir)
	}
	if _, err := Verify(dir); err != nil {
		lock.Close()
		return nil, err
	}
	secret, err := newSecret()
	if err != nil {
		lock.Close()
		return nil, err
	}
	opts := &server.Options{
		ServerName: "stampede-embedded",
		Username:   serverUser,
		Password:   secret,
		Host:       "127.0.0.1",
		Port:       server.RANDOM_PORT,
		HTTPPort:   0,
		NoSigs:     true,
		NoLog:      true,
		JetStream:  true,
		StoreDir:   dir,
		// fsyncs come from the sync service, one for many appends; the
		// server's own timer only bounds what a store without sync=1
		// could lose.
		SyncInterval: 10 * time.Second,
		// The limits the message protocol needs, nothing near them.
		MaxPayload:    2 << 20,
		MaxConn:       4096,
		MaxPending:    64 << 20,
		WriteDeadline: 10 * time.Second,
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		lock.Close()
		return nil, fmt.Errorf("store: jetstream server: %w", err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(readyTimeout) {
		ns.Shutdown()
		lock.Close()
		return nil, errors.New("store: jetstream server did not get ready within " + readyTimeout.String())
	}
	sy, err := startSyncer(ns.ClientURL(), dir, sc.syncFile, nats.UserInfo(serverUser, secret))
	if err != nil {
		ns.Shutdown()
		lock.Close()
		return nil, err
	}
	return &Server{ns: ns, lock: lock, dir: dir, sync: sy, user: url.UserPassword(serverUser, secret)}, nil
}

// newSecret returns a random password, 128 bits in hex.
func newSecret() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("store: jetstream credential: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// URL is the nats:// URL of the server with its credential: a secret,
// to be handed to a target process in its plan only (never on a command
// line or in the environment, where ps shows it), and shown only
// redacted (url.URL.Redacted).
func (s *Server) URL() string {
	u, err := url.Parse(s.ns.ClientURL())
	if err != nil {
		return s.ns.ClientURL()
	}
	u.User = s.user
	return u.String()
}

// Close shuts the server down (its files are synced) and releases the
// directory.
func (s *Server) Close() error {
	s.sync.close()
	s.ns.Shutdown()
	s.ns.WaitForShutdown()
	return s.lock.Close()
}
