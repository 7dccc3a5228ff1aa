// Package protocol is stampede's message protocol: JSON text frames that
// carry client messages with client-generated IDs, their acknowledgements
// with the store's sequence number, deliveries to the other members of a
// room, and resume after a reconnect. docs/protocol.md is the reference; in
// short:
//
//	client                                   server
//	join    {room}                     ->
//	                                   <-    joined  {room, through}
//	msg     {id, room, body}           ->    (stored once per room and id)
//	                                   <-    ack     {id, seq[, dup: true]}
//	                                         deliver {room, seq, id, body} -> other members
//	resume  {room, last_seq}           ->
//	                                   <-    resume_gap {room, from, through}  (only if history was dropped)
//	                                   <-    deliver ... (replay, seq > last_seq)
//	                                   <-    resumed {room, through}
//
// Decode is strict and allocation-free in the steady state: it reuses the
// Frame it is given, and its byte fields alias the input or the Frame's
// scratch buffer. The Append functions encode a frame into a caller's
// buffer.
package protocol
