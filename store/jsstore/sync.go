package jsstore

import (
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// SyncSubject is where the embedded server's owner answers sync requests:
// the answer comes once every block file of every stream under the
// server's directory is fsynced, after the request arrived. (Not under
// "stampede.", which the streams capture.)
const SyncSubject = "_STAMPEDE.SYNC"

// syncer is the group-commit sync service of an embedded Server.
type syncer struct {
	nc   *nats.Conn
	dir  string
	reqs chan *nats.Msg
	done chan struct{}
	wg   sync.WaitGroup

	// synced remembers each block file's size at its last fsync: a file
	// that has not grown since has nothing to sync (a purge rewrites a
	// block, which only forgets messages).
	synced map[string]int64
	// syncFile fsyncs the file or folder name: syncFile, or a test's
	// disk that keeps only what was synced.
	syncFile func(name string) error
}

func startSyncer(url, dir string, syncFn func(string) error, opts ...nats.Option) (*syncer, error) {
	nc, err := nats.Connect(url, append([]nats.Option{nats.Name("stampede-sync"), nats.MaxReconnects(-1)}, opts...)...)
	if err != nil {
		return nil, err
	}
	if syncFn == nil {
		syncFn = syncFile
	}
	sy := &syncer{nc: nc, dir: dir, reqs: make(chan *nats.Msg, 65536), done: make(chan struct{}), synced: map[string]int64{}, syncFile: syncFn}
	if _, err := nc.ChanSubscribe(SyncSubject, sy.reqs); err != nil {
		nc.Close()
		return nil, err
	}
	if err := nc.Flush(); err != nil {
		nc.Close()
		return nil, err
	}
	sy.wg.Add(1)
	go sy.run()
	return sy, nil
}

// run answers the requests in rounds: every request waiting when a round
// starts is answered by that round's fsyncs.
func (sy *syncer) run() {
	defer sy.wg.Done()
	var waiting []*nats.Msg
	for {
		select {
		case m := <-sy.reqs:
			waiting = append(waiting[:0], m)
		case <-sy.done:
			return
		}
	more:
		for {
			select {
			case m := <-sy.reqs:
				waiting = append(waiting, m)
			default:
				break more
			}
		}
		answer := []byte("+OK")
		if err := sy.fsync(); err != nil {
			answer = []byte("-ERR " + err.Error())
		}
		for _, m := range waiting {
			m.Respond(answer)
		}
		clear(waiting)
	}
}

// fsync syncs every block file that grew since its last sync, and the
// folders that hold them (new block files).
func (sy *syncer) fsync() error {
	dirs, _ := filepath.Glob(filepath.Join(sy.dir, "jetstream", "*", "streams", "*", "msgs"))
	for _, d := range dirs {
		blks, _ := filepath.Glob(filepath.Join(d, "*.blk"))
		grew := false
		for _, b := range blks {
			fi, err := os.Stat(b)
			if err != nil {
				continue // removed by a purge meanwhile
			}
			if old, ok := sy.synced[b]; ok && old == fi.Size() {
				continue
			}
			if err := sy.syncFile(b); err != nil {
				if os.IsNotExist(err) {
					continue
				}
				return err
			}
			if _, ok := sy.synced[b]; !ok {
				grew = true
			}
			sy.synced[b] = fi.Size()
		}
		if grew {
			if err := sy.syncFile(d); err != nil {
				return err
			}
		}
	}
	if len(sy.synced) > 4096 {
		sy.synced = map[string]int64{} // forget removed blocks now and then
	}
	return nil
}

func syncFile(name string) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

func (sy *syncer) close() {
	close(sy.done)
	sy.wg.Wait()
	sy.nc.Close()
}

// syncTimeout bounds one sync request.
const syncTimeout = 10 * time.Second
