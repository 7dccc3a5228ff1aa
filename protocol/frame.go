package protocol

// Limits of one frame. A frame over MaxFrameSize is refused before it is
// parsed; IDs and room names are bounded so a store can index them.
const (
	// MaxFrameSize is the largest frame, in bytes, Decode accepts.
	MaxFrameSize = 64 << 10
	// MaxIDLen is the longest message ID, in bytes.
	MaxIDLen = 128
	// MaxRoomLen is the longest room name, in bytes.
	MaxRoomLen = 128
	// maxDepth bounds nesting in an ignored field's value.
	maxDepth = 32
)

// Type is the kind of a frame, its "type" field.
type Type uint8

// The frame types. Client frames: Msg, Join, Resume. Server frames: Ack,
// Deliver, Joined, Resumed, ResumeGap.
const (
	TypeNone      Type = iota // no type: not a valid frame
	TypeMsg                   // client: msg {id, room, body}
	TypeAck                   // server: ack {id, seq}
	TypeDeliver               // server: deliver {room, seq, id, body}
	TypeJoin                  // client: join {room}
	TypeJoined                // server: joined {room, through}
	TypeResume                // client: resume {room, last_seq}
	TypeResumed               // server: resumed {room, through}
	TypeResumeGap             // server: resume_gap {room, from, through}
	numTypes
)

var typeNames = [numTypes]string{
	TypeNone:      "",
	TypeMsg:       "msg",
	TypeAck:       "ack",
	TypeDeliver:   "deliver",
	TypeJoin:      "join",
	TypeJoined:    "joined",
	TypeResume:    "resume",
	TypeResumed:   "resumed",
	TypeResumeGap: "resume_gap",
}

// String returns the type's name as it appears in the "type" field.
func (t Type) String() string {
	if t < numTypes {
		return typeNames[t]
	}
	return "type(?)"
}

// FromClient reports whether t is sent by clients (msg, join, resume).
func (t Type) FromClient() bool { return t == TypeMsg || t == TypeJoin || t == TypeResume }

// Field bits: which fields a frame carries.
type field uint16

const (
	fType field = 1 << iota
	fID
	fRoom
	fBody
	fSeq
	fLastSeq
	fThrough
	fFrom
	fDup
)

// required lists the fields each type must carry (besides "type").
var required = [numTypes]field{
	TypeMsg:       fID | fRoom | fBody,
	TypeAck:       fID | fSeq, // and optionally dup
	TypeDeliver:   fRoom | fSeq | fID | fBody,
	TypeJoin:      fRoom,
	TypeJoined:    fRoom | fThrough,
	TypeResume:    fRoom | fLastSeq,
	TypeResumed:   fRoom | fThrough,
	TypeResumeGap: fRoom | fFrom | fThrough,
}

// name returns the JSON name of a single field bit.
func (fl field) name() string {
	switch fl {
	case fType:
		return "type"
	case fID:
		return "id"
	case fRoom:
		return "room"
	case fBody:
		return "body"
	case fSeq:
		return "seq"
	case fLastSeq:
		return "last_seq"
	case fThrough:
		return "through"
	case fFrom:
		return "from"
	case fDup:
		return "dup"
	}
	return ""
}

// Frame is one protocol frame. Which fields are meaningful depends on Type
// (see the Type constants); the others are zero.
//
// After Decode, ID, Room and Body alias the decoded input or the Frame's
// own scratch buffer: they are valid until the input changes or the Frame
// is decoded into again. Copy what must outlive that.
type Frame struct {
	// Type is the frame's kind.
	Type Type
	// ID is the client-generated message ID (msg, ack, deliver): 1 to
	// MaxIDLen bytes, no control characters.
	ID []byte
	// Room is the room name (msg, deliver, join, joined, resume, resumed,
	// resume_gap): 1 to MaxRoomLen bytes, no control characters.
	Room []byte
	// Body is the message text (msg, deliver), possibly empty.
	Body []byte
	// Seq is the store's sequence number of a message in its room, from 1
	// (ack, deliver).
	Seq uint64
	// LastSeq is the highest seq of the room the client has seen (resume);
	// 0 means none.
	LastSeq uint64
	// Through is the seq up to which the client is now served (joined,
	// resumed) or the last seq lost (resume_gap).
	Through uint64
	// From is the first seq lost (resume_gap).
	From uint64
	// Dup marks an ack of a message ID that was stored before: Seq is the
	// original seq and nothing was delivered (optional "dup": true of ack).
	Dup bool

	has     field
	scratch []byte // unescaped strings
}
