package loadgen

import (
	"strconv"
	"time"

	"github.com/stampede-dev/stampede/results/track"
	"github.com/stampede-dev/stampede/spec"
)

// names makes the stampede mode's room names and message IDs. Both carry a
// tag of the run (its start instant in base 36, which every process of a
// fleet shares), so a durable store that outlives runs never mistakes this
// run's messages for an earlier run's: its dedupe would swallow them.
//
//	room:       <tag>.r<k>                 k = client ID mod Rooms (or ID / 10)
//	message ID: <tag>.<16 hex digits>      the key: sender ID << 32 | its message number
type names struct {
	tag   []byte
	rooms int // Config.Rooms
}

func newNames(start time.Time, rooms int) names {
	return names{tag: strconv.AppendUint(nil, uint64(start.UnixNano()), 36), rooms: rooms}
}

// roomOf returns the room number of client id.
func (n *names) roomOf(id uint32) uint32 {
	return spec.RoomOf(n.rooms, id)
}

// appendRoom appends room k's name.
func (n *names) appendRoom(dst []byte, k uint32) []byte {
	dst = append(dst, n.tag...)
	dst = append(dst, ".r"...)
	return strconv.AppendUint(dst, uint64(k), 10)
}

// roomName returns room k's name.
func (n *names) roomName(k uint32) string { return string(n.appendRoom(nil, k)) }

// appendID appends the message ID of key.
func (n *names) appendID(dst []byte, key uint64) []byte {
	dst = append(dst, n.tag...)
	dst = append(dst, '.')
	for i := 15; i >= 0; i-- {
		dst = append(dst, hexDigits[(key>>(4*i))&0xf])
	}
	return dst
}

// key parses a message ID made by appendID; ok is false for any other
// (another run's or another sender's).
func (n *names) key(id []byte) (key uint64, ok bool) {
	t := len(n.tag)
	if len(id) != t+1+16 || string(id[:t]) != string(n.tag) || id[t] != '.' {
		return 0, false
	}
	for _, b := range id[t+1:] {
		d, ok := unhex(b)
		if !ok {
			return 0, false
		}
		key = key<<4 | uint64(d)
	}
	return key, key != track.KeyUnknown
}
