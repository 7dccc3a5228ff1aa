package results

// TLSHandshakes are one role's completed TLS handshakes, full and
// resumed, with the CPU each kind took on average (summary.json
// "tls_handshakes"): a wss:// server's own count, every process it had
// summed.
type TLSHandshakes struct {
	// Full counts handshakes that did the key exchange and signed with
	// the certificate's key.
	Full uint64 `json:"full"`
	// Resumed counts handshakes that resumed a session (a TLS 1.3 PSK or
	// a TLS 1.2 ticket).
	Resumed uint64 `json:"resumed"`
	// FullCPUUs is the mean CPU of a full handshake in microseconds, nil
	// without one.
	FullCPUUs *float64 `json:"full_cpu_us"`
	// ResumedCPUUs is the mean CPU of a resumed handshake, nil without
	// one.
	ResumedCPUUs *float64 `json:"resumed_cpu_us"`
}

// NewTLSHandshakes returns the figures of full and resumed handshakes
// that took fullNS and resumedNS nanoseconds of CPU in all.
func NewTLSHandshakes(full, resumed, fullNS, resumedNS uint64) TLSHandshakes {
	return TLSHandshakes{Full: full, Resumed: resumed, FullCPUUs: meanUs(fullNS, full), ResumedCPUUs: meanUs(resumedNS, resumed)}
}

// ResumedShare is the resumed handshakes' share of all, 0 without any.
func (h TLSHandshakes) ResumedShare() float64 {
	if h.Full+h.Resumed == 0 {
		return 0
	}
	return float64(h.Resumed) / float64(h.Full+h.Resumed)
}

func meanUs(ns, n uint64) *float64 {
	if n == 0 {
		return nil
	}
	v := float64(ns) / float64(n) / 1e3
	return &v
}
