// Package tlsconf is the TLS of a reconnect storm: what a handshake costs
// and what a restart does to session resumption.
//
//	certificate kind ──► ServerConfig ──► Server.Handshake ──► Stats
//	(cert.go)            ticket keys        full or resumed,    full/resumed
//	                     (ticketkeys.go)    CPU of each         CPU per kind
//
// A server either keeps its session-ticket keys in memory (crypto/tls draws
// them at start: a restart forgets them, and every client that would have
// resumed pays a full handshake at the worst moment) or reads them from a
// ticket-key file that survives the restart (KeyFile), rotated as real
// servers rotate them: the first key encrypts new tickets, the older ones
// still decrypt. The processes of one SO_REUSEPORT group read one file, so
// a client that reconnects to a sibling resumes.
//
// On the client side, Session is a one-entry session cache per client, as
// a browser keeps one per site: TLS 1.3 PSK resumption or a TLS 1.2
// ticket, never 0-RTT (crypto/tls does not send early data).
package tlsconf
