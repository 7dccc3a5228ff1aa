// Package pgstore is the PostgreSQL backend of package store
// (docs/protocol.md, "Stores"). Importing it registers the "postgres" and
// "postgresql" URL schemes with store.Register, so store.Open accepts
// postgres://user@host:port/db[?table=T&...] in that binary and only in
// that binary: the pgx driver stays out of the ones that do not need it.
package pgstore

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stampede-dev/stampede/store"
)

func init() {
	open := func(ctx context.Context, u *url.URL, opt store.Options) (store.Store, error) {
		s, err := Open(ctx, u, opt)
		if err != nil {
			return nil, err // not a typed nil in a non-nil interface
		}
		return s, nil
	}
	store.Register("postgres", open)
	store.Register("postgresql", open)
}

var _ store.Store = (*Store)(nil)

// Store is the PostgreSQL backend: one message table and one counter
// row per room, created on open.
//
//	T        (room, seq, id, body, undeduped, created)  primary key (room, seq),
//	         unique (room, id) where not undeduped
//	T_rooms  (room, head)                                the room's latest seq
//
// An append batch is one transaction: it takes the room's counter row's
// lock with an upsert (serialising the room's appends, so seqs are dense and
// concurrent appends of one ID cannot both win), then for each message
// `INSERT ... ON CONFLICT (room, id) DO NOTHING RETURNING seq`, falling
// back to the existing row's seq on a conflict (a duplicate), then stores
// the new head and deletes rows beyond the retention bound. The dedupe
// window is therefore the retention window.
type Store struct {
	pool  *pgxpool.Pool
	opt   store.Options
	table string
	q     pgQueries
}

type pgQueries struct {
	lockRoom, insert, insertNoDedupe, setHead, trim, head, since string
}

// defaultPGConns is the pool size unless the URL sets pool_max_conns.
const defaultPGConns = 16

var tableName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,50}$`)

// Open connects to u (postgres://user@host:port/db?..., with an optional
// table=T, default "stampede_messages") and creates the tables if missing.
func Open(ctx context.Context, u *url.URL, opt store.Options) (*Store, error) {
	if err := opt.Validate(); err != nil {
		return nil, err
	}
	opt = opt.WithDefaults()
	q := u.Query()
	table := q.Get("table")
	if table == "" {
		table = "stampede_messages"
	}
	if !tableName.MatchString(table) {
		return nil, fmt.Errorf("store: postgres table %q: want [a-z_][a-z0-9_]*, at most 51 characters", table)
	}
	q.Del("table")
	q.Del("keep") // the run's (store.ForRun), not the driver's
	u2 := *u
	u2.RawQuery = q.Encode()
	cfg, err := pgxpool.ParseConfig(u2.String())
	if err != nil {
		return nil, fmt.Errorf("store: postgres URL: %w", err)
	}
	if !q.Has("pool_max_conns") {
		// Every room appends in its own transaction: more than pgx's
		// default of max(4, CPUs) connections keeps rooms from queueing.
		cfg.MaxConns = defaultPGConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("store: postgres: %w", err)
	}
	s := &Store{pool: pool, opt: opt, table: table, q: pgQueriesFor(table)}
	if err := s.createSchema(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
}

func pgQueriesFor(t string) pgQueries {
	return pgQueries{
		// Creates the counter row or locks the existing one (DO UPDATE
		// takes the row lock), returning the head, in one round trip.
		lockRoom: `INSERT INTO ` + t + `_rooms AS r (room, head) VALUES ($1, 0)
		           ON CONFLICT (room) DO UPDATE SET head = r.head RETURNING head`,
		insert: `WITH ins AS (INSERT INTO ` + t + ` (room, seq, id, body) VALUES ($1, $2, $3, $4)
		           ON CONFLICT (room, id) WHERE NOT undeduped DO NOTHING RETURNING seq)
		         SELECT seq, false FROM ins
		         UNION ALL SELECT seq, true FROM ` + t + ` WHERE room = $1 AND id = $3 AND NOT undeduped
		         LIMIT 1`,
		insertNoDedupe: `INSERT INTO ` + t + ` (room, seq, id, body, undeduped) VALUES ($1, $2, $3, $4, true)`,
		setHead:        `UPDATE ` + t + `_rooms SET head = $2 WHERE room = $1`,
		trim:           `DELETE FROM ` + t + ` WHERE room = $1 AND seq <= $2`,
		head:           `SELECT head FROM ` + t + `_rooms WHERE room = $1`,
		since:          `SELECT seq, id, body FROM ` + t + ` WHERE room = $1 AND seq > $2 AND seq <= $3 ORDER BY seq LIMIT $4`,
	}
}

// createSchema creates the tables under an advisory lock, so processes
// opening the same new store at once do not race on CREATE.
func (s *Store) createSchema(ctx context.Context) error {
	t := s.table
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext($1))`, t); err != nil {
			return err
		}
		for _, stmt := range []string{
			`CREATE TABLE IF NOT EXISTS ` + t + ` (
				room text NOT NULL,
				seq bigint NOT NULL,
				id text NOT NULL,
				body bytea NOT NULL,
				undeduped boolean NOT NULL DEFAULT false,
				created timestamptz NOT NULL DEFAULT now(),
				PRIMARY KEY (room, seq))`,
			`CREATE UNIQUE INDEX IF NOT EXISTS ` + t + `_id ON ` + t + ` (room, id) WHERE NOT undeduped`,
			`CREATE TABLE IF NOT EXISTS ` + t + `_rooms (room text PRIMARY KEY, head bigint NOT NULL)`,
		} {
			if _, err := tx.Exec(ctx, stmt); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: postgres create tables %s: %w", t, err)
	}
	return nil
}

// Append implements store.Store with a batch of one.
func (s *Store) Append(ctx context.Context, room, id string, body []byte) (uint64, bool, error) {
	return store.AppendOne(ctx, s, room, id, body)
}

// AppendBatch implements store.Store in one transaction.
func (s *Store) AppendBatch(ctx context.Context, room string, entries []store.Entry) ([]store.Result, error) {
	if len(entries) == 0 {
		return nil, nil
	}
	res := make([]store.Result, len(entries))
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var head int64
		if err := tx.QueryRow(ctx, s.q.lockRoom, room).Scan(&head); err != nil {
			return err
		}
		start := head
		for i, e := range entries {
			if s.opt.NoDedupe {
				if _, err := tx.Exec(ctx, s.q.insertNoDedupe, room, head+1, e.ID, e.Body); err != nil {
					return err
				}
				head++
				res[i] = store.Result{Seq: uint64(head)}
				continue
			}
			var seq int64
			var dup bool
			if err := tx.QueryRow(ctx, s.q.insert, room, head+1, e.ID, e.Body).Scan(&seq, &dup); err != nil {
				return err
			}
			if !dup {
				head++
			}
			res[i] = store.Result{Seq: uint64(seq), Dup: dup}
		}
		if head == start {
			return nil
		}
		if _, err := tx.Exec(ctx, s.q.setHead, room, head); err != nil {
			return err
		}
		// Delivered to the listeners at COMMIT, never before (Follow).
		if _, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, s.table, strconv.FormatInt(head, 10)+" "+room); err != nil {
			return err
		}
		if cut := head - int64(s.opt.Retention); cut > 0 {
			if _, err := tx.Exec(ctx, s.q.trim, room, cut); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: postgres append: %w", err)
	}
	return res, nil
}

// Since implements store.Store: the head first, then the rows up to it.
func (s *Store) Since(ctx context.Context, room string, afterSeq uint64, limit int) ([]store.Message, uint64, bool, error) {
	head, err := s.Head(ctx, room)
	if err != nil || afterSeq >= head {
		return nil, head, false, err
	}
	lim := int64(limit)
	if limit <= 0 {
		lim = int64(head - afterSeq)
	}
	rows, err := s.pool.Query(ctx, s.q.since, room, int64(afterSeq), int64(head), lim)
	if err != nil {
		return nil, 0, false, fmt.Errorf("store: postgres since: %w", err)
	}
	msgs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Message, error) {
		var m store.Message
		var seq int64
		err := r.Scan(&seq, &m.ID, &m.Body)
		m.Seq = uint64(seq)
		return m, err
	})
	if err != nil {
		return nil, 0, false, fmt.Errorf("store: postgres since: %w", err)
	}
	through := head
	if limit > 0 && len(msgs) == limit {
		through = msgs[len(msgs)-1].Seq
	}
	gap := len(msgs) == 0 || msgs[0].Seq > afterSeq+1
	return msgs, through, gap, nil
}

// Head implements store.Store.
func (s *Store) Head(ctx context.Context, room string) (uint64, error) {
	var head int64
	err := s.pool.QueryRow(ctx, s.q.head, room).Scan(&head)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("store: postgres head: %w", err)
	}
	return uint64(head), nil
}

// Close implements store.Store.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

// Drop implements store.Dropper: it removes the store's tables.
func (s *Store) Drop(ctx context.Context) error { return s.DropTables(ctx) }

// DropTables removes the store's tables (for tests and clean-up).
func (s *Store) DropTables(ctx context.Context) error {
	_, err := s.pool.Exec(ctx, `DROP TABLE IF EXISTS `+s.table+`, `+s.table+`_rooms`)
	return err
}

var _ store.Feed = (*Store)(nil)

// Follow implements store.Feed with LISTEN on a connection of its own:
// each append's transaction runs pg_notify(table, "head room"), which
// PostgreSQL delivers at COMMIT. The table stays the source of truth:
// followers read the messages with Since. When the connection breaks
// Follow connects again, listens again and calls fn(Update{}), so every
// room reads the table on from its last position.
func (s *Store) Follow(ctx context.Context, fn func(store.Update)) error {
	broken := false
	for ctx.Err() == nil {
		err := s.listen(ctx, fn, &broken)
		if ctx.Err() != nil {
			break
		}
		_ = err
		broken = true
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
		}
	}
	return ctx.Err()
}

// listen serves Follow on one connection until it fails.
func (s *Store) listen(ctx context.Context, fn func(store.Update), broken *bool) error {
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, `LISTEN `+s.table); err != nil {
		return err
	}
	// Listening from here on: what was committed before (the server may
	// have had members already, or the connection broke) is read by a
	// recheck of every room.
	*broken = false
	fn(store.Update{})
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		seqStr, room, ok := strings.Cut(n.Payload, " ")
		seq, err := strconv.ParseUint(seqStr, 10, 64)
		if !ok || err != nil {
			fn(store.Update{})
			continue
		}
		fn(store.Update{Room: room, Seq: seq})
	}
}
