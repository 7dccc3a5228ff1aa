package target

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gobwas/ws"

	"github.com/stampede-dev/stampede/protocol"
	"github.com/stampede-dev/stampede/spec"
	"github.com/stampede-dev/stampede/store"
)

// Limits of the message protocol handler.
const (
	// MaxRoomsPerConn is how many rooms one connection may join.
	MaxRoomsPerConn = 64
	// MaxRooms is how many rooms one server serves at once.
	MaxRooms = 100_000
	// roomQueue is the depth of a room's operation queue; a full queue
	// makes the workers wait (backpressure on the senders).
	roomQueue = 1024
	// maxRoomBatch bounds the messages of one room appended together.
	maxRoomBatch = 256
	// replayPage is how many messages one Since call of a replay reads.
	replayPage = 1000
	// storeTimeout bounds one store call.
	storeTimeout = 10 * time.Second
	// catchUpRetry is how long a room waits to read the store again after
	// a failed catch-up, and the feed after it broke off.
	catchUpRetry = time.Second
)

// Protocol is the Handler of the message protocol (docs/protocol.md) on
// top of a store.Store: msg is appended (deduped by room and ID) and ACKed
// once durable, then delivered to the room's other members; join and
// resume make a connection a member, resume after replaying from the
// store.
//
// Every room has one goroutine that performs its operations in order:
// appends (batched: every msg waiting when the previous batch is done goes
// in one AppendBatch), joins, resumes and leaves. A room's frames to a
// connection therefore go out in seq order, a replay cannot interleave
// with live deliveries, and seqs reach the room's members in the order the
// store assigned them. Workers only decode and enqueue, so a slow store
// call never holds a worker. On a store that several processes share
// (store.Feed) the rooms follow its feed, so a room fans out across every
// process: what others stored is read from the store and delivered in seq
// order (room.catchUp).
type Protocol struct {
	st   store.Store
	feed bool // st is a store.Feed this Protocol follows

	ctx   context.Context
	stop  context.CancelFunc
	wg    sync.WaitGroup
	conns sync.Map // *Conn -> *protoConn

	mu     sync.Mutex
	rooms  map[string]*room
	closed bool

	followErrs atomic.Int64 // times the feed ended with an error
}

// protoConn is a connection's protocol state.
type protoConn struct {
	closed atomic.Bool
	mu     sync.Mutex
	rooms  map[*room]struct{}
}

// NewProtocol returns the message protocol handler on st. Dedupe is the
// store's: one opened with store.Options.NoDedupe stores a resent message
// again and the handler delivers it again (`--no-dedupe`). Close the
// handler after the server's Shutdown, before closing st. (A Server whose
// Config.Store is set does all this itself.)
func NewProtocol(st store.Store) *Protocol {
	ctx, stop := context.WithCancel(context.Background())
	p := &Protocol{st: st, ctx: ctx, stop: stop, rooms: make(map[string]*room)}
	if f, ok := st.(store.Feed); ok && store.Shared(st) {
		p.feed = true
		p.wg.Add(1)
		go p.follow(f)
	}
	return p
}

// follow hands the store's updates to the rooms this process serves:
// messages other processes stored reach the members here (rooms fan out
// across every process sharing the store).
func (p *Protocol) follow(f store.Feed) {
	defer p.wg.Done()
	fn := func(u store.Update) {
		p.mu.Lock()
		if u.Room == "" {
			for _, r := range p.rooms {
				r.notify(0, true)
			}
			p.mu.Unlock()
			return
		}
		r := p.rooms[u.Room]
		p.mu.Unlock()
		if r != nil {
			r.notify(u.Seq, false)
		}
	}
	for p.ctx.Err() == nil {
		if err := f.Follow(p.ctx, fn); err != nil && p.ctx.Err() == nil {
			p.followErrs.Add(1)
		}
		select {
		case <-time.After(catchUpRetry):
			fn(store.Update{}) // what was missed meanwhile
		case <-p.ctx.Done():
		}
	}
}

// Close stops the rooms' goroutines after their current operation.
func (p *Protocol) Close() error {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.stop()
	p.wg.Wait()
	return nil
}

// OnOpen implements Handler.
func (p *Protocol) OnOpen(c *Conn) error {
	p.conns.Store(c, &protoConn{rooms: make(map[*room]struct{})})
	return nil
}

// OnClose implements Handler: the connection leaves its rooms.
func (p *Protocol) OnClose(c *Conn, _ error) {
	v, ok := p.conns.LoadAndDelete(c)
	if !ok {
		return
	}
	pc := v.(*protoConn)
	pc.mu.Lock()
	pc.closed.Store(true)
	rooms := pc.rooms
	pc.rooms = nil
	pc.mu.Unlock()
	for r := range rooms {
		r.enqueue(roomOp{kind: opLeave, c: c, pc: pc})
	}
}

var framePool = sync.Pool{New: func() any { return new(protocol.Frame) }}

// OnMessage implements Handler: it decodes the frame and hands it to its
// room. A malformed frame closes the connection with the decoder's close
// code (1008, or 1009 when too large).
func (p *Protocol) OnMessage(c *Conn, op ws.OpCode, b []byte) error {
	if op != ws.OpText {
		return &CloseError{Code: ws.StatusUnsupportedData, Reason: "protocol: frames are JSON text"}
	}
	f := framePool.Get().(*protocol.Frame)
	defer framePool.Put(f)
	if err := protocol.Decode(b, f); err != nil {
		var pe *protocol.Error
		if errors.As(err, &pe) {
			return &CloseError{Code: ws.StatusCode(pe.CloseCode()), Reason: pe.Error()}
		}
		return &CloseError{Code: ws.StatusPolicyViolation, Reason: err.Error()}
	}
	v, ok := p.conns.Load(c)
	if !ok {
		return nil // closing
	}
	pc := v.(*protoConn)
	switch f.Type {
	case protocol.TypeMsg:
		r, err := p.room(f.Room)
		if err != nil {
			return err
		}
		r.enqueue(roomOp{kind: opMsg, c: c, pc: pc, id: string(f.ID), body: append([]byte(nil), f.Body...)})
	case protocol.TypeJoin, protocol.TypeResume:
		r, err := p.room(f.Room)
		if err != nil {
			return err
		}
		pc.mu.Lock()
		if _, member := pc.rooms[r]; !member && len(pc.rooms) >= MaxRoomsPerConn {
			pc.mu.Unlock()
			return &CloseError{Code: ws.StatusPolicyViolation, Reason: fmt.Sprintf("protocol: more than %d rooms on one connection", MaxRoomsPerConn)}
		}
		if pc.rooms != nil {
			pc.rooms[r] = struct{}{}
		}
		pc.mu.Unlock()
		if f.Type == protocol.TypeJoin {
			r.enqueue(roomOp{kind: opJoin, c: c, pc: pc})
		} else {
			r.enqueue(roomOp{kind: opResume, c: c, pc: pc, after: f.LastSeq})
		}
	default:
		return &CloseError{Code: ws.StatusPolicyViolation, Reason: "protocol: a client may not send " + f.Type.String()}
	}
	return nil
}

// room returns the room named name, starting it on first use.
func (p *Protocol) room(name []byte) (*room, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if r := p.rooms[string(name)]; r != nil {
		return r, nil
	}
	if p.closed {
		return nil, &CloseError{Code: ws.StatusGoingAway, Reason: "going away"}
	}
	if len(p.rooms) >= MaxRooms {
		return nil, &CloseError{Code: ws.StatusPolicyViolation, Reason: fmt.Sprintf("protocol: server has %d rooms, its limit", MaxRooms)}
	}
	r := &room{p: p, name: string(name), ops: make(chan roomOp, roomQueue), members: make(map[*Conn]*member), kick: make(chan struct{}, 1)}
	p.rooms[r.name] = r
	p.wg.Add(1)
	go r.run()
	return r, nil
}

// startProtocol opens cfg.Store and makes the protocol cfg's Handler, when
// cfg names a store and no Handler. The Server closes both at the end of
// its Shutdown (closeProtocol).
func startProtocol(cfg *Config) (*Protocol, error) {
	if cfg.Store == "" || cfg.Handler != nil {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	st, err := store.Open(ctx, cfg.Store, store.Options{Retention: cfg.Retention, NoDedupe: cfg.NoDedupe})
	if err != nil {
		return nil, spec.Wrap("Server.Store", err)
	}
	p := NewProtocol(st)
	cfg.Handler = p
	return p, nil
}

// closeProtocol stops p's rooms and closes its store; nil-safe.
func closeProtocol(p *Protocol) {
	if p == nil {
		return
	}
	p.Close()
	p.st.Close()
}
